import CCurl
import Foundation

/// One request for the pool: an HTTP/2 POST.
struct HTTP2Exchange: Sendable {
    /// The absolute URL.
    var url: String
    /// Header lines, `name: value`.
    var headers: [String]
    /// The request body.
    var body: [UInt8]
}

/// The pool's answer to one ``HTTP2Exchange``.
struct HTTP2Result: Sendable {
    /// The HTTP status; 0 when no response arrived.
    var status: Int
    /// The response's header fields, names in lowercase.
    var headers: [String: String]
    /// The response body (at most ``HTTP2Pool/maximumResponseBody`` bytes are kept).
    var body: [UInt8]
    /// libcurl's error text when the transfer failed below HTTP (connection refused or dropped,
    /// TLS, timeout), or "client shut down"; nil when a response arrived whole.
    var error: String?
}

/// How the pool connects.
struct HTTP2PoolSettings: Sendable {
    /// The most connections to the host (libcurl's `CURLMOPT_MAX_HOST_CONNECTIONS`).
    var connections: Int
    /// A PEM CA bundle (`CURLOPT_CAINFO`); nil: the system's.
    var caFile: String?
    /// The longest a request may take once started, connecting included, ms.
    var requestTimeoutMs: Int
    /// The longest a connection may take to open (TCP and TLS), ms.
    var connectTimeoutMs = 10_000
    /// The most streams this side opens on one connection (`CURLMOPT_MAX_CONCURRENT_STREAMS`; the
    /// server's `SETTINGS_MAX_CONCURRENT_STREAMS` may lower it). 32, not 1,000: libcurl's
    /// `curl_multi_perform` walks every transfer in flight on each wake, so 1,000 streams a
    /// connection cost more CPU per push than they saved in round trips (`scripts/bench push`,
    /// 50,000 followers: p99 7.5 s and 133 µs of NotificationService CPU per push at 1,000; 5.0 s
    /// and 116 µs at 100; 4.9 s and 109 µs at 32).
    var streamsPerConnection = 32
    /// An idle connection older than this is not reused, seconds (`CURLOPT_MAXAGE_CONN`;
    /// libcurl's default, 118 s, would close and reopen connections between bursts).
    var maximumIdleSeconds = 3_600
}

/// A few long-lived HTTP/2 connections to one host, many streams each, driven by libcurl's multi
/// interface on a thread of its own.
///
/// The thread owns the multi handle and every easy handle: it sleeps in `curl_multi_poll`, and
/// `submit` wakes it with `curl_multi_wakeup` (the one libcurl call other threads make). libcurl
/// keeps the connections: `CURLMOPT_PIPELINING = CURLPIPE_MULTIPLEX` and `CURLOPT_PIPEWAIT` put
/// new streams on an open connection (or one being opened) rather than opening another, and
/// `CURLMOPT_MAX_HOST_CONNECTIONS` caps them at the pool size; a connection that died is dropped
/// by libcurl and the next request opens a new one. Requests beyond what the connections can
/// carry (`connections × streamsPerConnection`) wait here, in order, so their timeouts start only
/// when they do.
///
/// Apple asks for exactly this ("Sending notification requests to APNs": keep connections open,
/// many notifications each; rapid connect and disconnect is treated as a denial-of-service attack).
final class HTTP2Pool: @unchecked Sendable {
    // @unchecked: `incoming` and `closed` are guarded by `lock`; `multi` is only used by the pool
    // thread, except `curl_multi_wakeup`, which libcurl allows from any thread and which is only
    // called under `lock` while `closed` is false (the thread cleans `multi` up only after it saw
    // `closed` under `lock`); everything under "Pool thread" is the pool thread's alone.
    private struct Job {
        var exchange: HTTP2Exchange
        var completion: @Sendable (HTTP2Result) -> Void
    }

    /// The most response body bytes kept (APNs error bodies are a few dozen).
    static let maximumResponseBody = 65_536

    private let settings: HTTP2PoolSettings
    private let lock = NSLock()
    private var incoming: [Job] = []
    private var closed = false
    private let multi: UnsafeMutableRawPointer

    /// Starts the pool's thread; connections open with the first requests.
    init(settings: HTTP2PoolSettings) {
        _ = Self.globalInit
        self.settings = settings
        guard let m = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        multi = m
        let connections = settings.connections
        _ = ccurl_multi_setopt_long(m, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = ccurl_multi_setopt_long(m, CURLMOPT_MAX_HOST_CONNECTIONS, connections)
        _ = ccurl_multi_setopt_long(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections)
        _ = ccurl_multi_setopt_long(m, CURLMOPT_MAXCONNECTS, connections)
        _ = ccurl_multi_setopt_long(m, CURLMOPT_MAX_CONCURRENT_STREAMS, settings.streamsPerConnection)
        let thread = Thread { self.run() }
        thread.name = "apns-http2"
        thread.start()
    }

    /// `curl_global_init`, once per process.
    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// Queues a request; `completion` runs once, on the pool thread (keep it short), or at once
    /// with error "client shut down" after `shutdown()`.
    func submit(_ exchange: HTTP2Exchange, completion: @escaping @Sendable (HTTP2Result) -> Void) {
        submit([(exchange, completion)])
    }

    /// Queues requests in order, under one lock and with at most one wakeup of the pool thread
    /// (a batch of 500 pushes submitted one by one woke it up to 500 times); each completion runs
    /// as for `submit(_:completion:)`.
    func submit(_ requests: [(HTTP2Exchange, @Sendable (HTTP2Result) -> Void)]) {
        guard !requests.isEmpty else { return }
        lock.lock()
        if closed {
            lock.unlock()
            let shutDown = HTTP2Result(status: 0, headers: [:], body: [], error: "client shut down")
            for (_, completion) in requests { completion(shutDown) }
            return
        }
        let wasEmpty = incoming.isEmpty
        for (exchange, completion) in requests { incoming.append(Job(exchange: exchange, completion: completion)) }
        // A queue that was not empty has been signalled since the thread last took it: that
        // wakeup is still pending, or the thread is about to take the queue.
        if wasEmpty { curl_multi_wakeup(multi) }
        lock.unlock()
    }

    /// Stops the thread: requests not finished complete with error "client shut down", the
    /// connections close. Returns at once; later `submit`s fail the same way.
    func shutdown() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        curl_multi_wakeup(multi)
    }

    // MARK: Pool thread

    /// An easy handle and what has arrived for its current request. Handles are kept for the
    /// next request (`idle`) rather than made and freed per request: the options that never
    /// change are set once, and libcurl keeps its buffers.
    private final class Transfer {
        var job: Job?
        let handle: UnsafeMutableRawPointer
        var headerList: UnsafeMutablePointer<curl_slist>?
        var headers: [String: String] = [:]
        var body: [UInt8] = []

        init(handle: UnsafeMutableRawPointer) { self.handle = handle }
    }

    private var idle: [Transfer] = []
    /// The connections' sockets (from libcurl's open and close socket callbacks).
    private var sockets: Set<Int32> = []
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private var waiting: [Job] = []
    private var waitingHead = 0

    private func run() {
        while true {
            lock.lock()
            let jobs = incoming
            incoming.removeAll(keepingCapacity: true)
            let stopping = closed
            lock.unlock()
            waiting.append(contentsOf: jobs)
            if stopping { break }
            // Corked while libcurl writes: every stream it starts now is one TLS record and one
            // `send` (libcurl 7.88 writes each HTTP/2 frame on its own), and without the cork
            // each of those sends leaves as its own TCP segment (TCP_NODELAY). Uncorking before
            // the wait sends them together, in full segments, at once. (Nagle instead, without
            // TCP_NODELAY, stalled on delayed ACKs: 31 % of a 100,000-push run was not sent in
            // 50 s.)
            cork(true)
            startWaiting()
            var stillRunning: Int32 = 0
            curl_multi_perform(multi, &stillRunning)
            finishDone()
            // Completions may have queued again (a resend after a new provider token): that
            // wakes the poll below at once.
            startWaiting()
            cork(false)
            var ready: Int32 = 0
            curl_multi_poll(multi, nil, 0, 1_000, &ready)
        }
        let shutDown = HTTP2Result(status: 0, headers: [:], body: [], error: "client shut down")
        for transfer in active.values {
            let job = transfer.job
            release(transfer)
            job?.completion(shutDown)
        }
        active = [:]
        for transfer in idle { free(transfer) }
        idle = []
        for job in waiting[waitingHead...] { job.completion(shutDown) }
        waiting = []
        curl_multi_cleanup(multi)
    }

    /// Sets `TCP_CORK` (tcp(7)) on every connection; clearing it sends what it held.
    private func cork(_ on: Bool) {
        var value: Int32 = on ? 1 : 0
        for fd in sockets {
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// A socket libcurl made for a connection.
    fileprivate func opened(_ fd: Int32, purpose: curlsocktype) {
        if purpose == CURLSOCKTYPE_IPCXN { sockets.insert(fd) }
    }

    /// A socket libcurl is done with: closes it.
    fileprivate func closing(_ fd: Int32) {
        sockets.remove(fd)
        close(fd)
    }

    /// Starts waiting requests while the connections have room for them.
    private func startWaiting() {
        let capacity = settings.connections * settings.streamsPerConnection
        while active.count < capacity, waitingHead < waiting.count {
            let job = waiting[waitingHead]
            waitingHead += 1
            start(job)
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead > 4_096 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    private func start(_ job: Job) {
        guard let transfer = idle.popLast() ?? makeTransfer() else {
            job.completion(HTTP2Result(status: 0, headers: [:], body: [], error: "curl_easy_init failed"))
            return
        }
        let h = transfer.handle
        transfer.job = job
        _ = ccurl_setopt_string(h, CURLOPT_URL, job.exchange.url)
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for line in job.exchange.headers { list = curl_slist_append(list, line) }
        // No "Expect: 100-continue" round trip, no "Accept: */*".
        list = curl_slist_append(list, "Expect:")
        list = curl_slist_append(list, "Accept:")
        transfer.headerList = list
        _ = ccurl_setopt_slist(h, CURLOPT_HTTPHEADER, list)
        let body = job.exchange.body
        _ = ccurl_setopt_long(h, CURLOPT_POSTFIELDSIZE, body.count)
        body.withUnsafeBufferPointer { p in
            // COPYPOSTFIELDS copies the bytes now; a non-null pointer even for an empty body.
            let bytes = UnsafeMutableRawPointer(mutating: p.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            _ = ccurl_setopt_pointer(h, CURLOPT_COPYPOSTFIELDS, bytes)
        }
        let key = Unmanaged.passUnretained(transfer).toOpaque()
        active[key] = transfer
        if curl_multi_add_handle(multi, h) != CURLM_OK {
            active[key] = nil
            release(transfer)
            job.completion(HTTP2Result(status: 0, headers: [:], body: [], error: "curl_multi_add_handle failed"))
        }
    }

    /// A new easy handle with the options every request shares; nil when libcurl is out of memory.
    private func makeTransfer() -> Transfer? {
        guard let h = curl_easy_init() else { return nil }
        let transfer = Transfer(handle: h)
        // The pool keeps the transfer (in `active` or `idle`) until `free`, so the unretained
        // pointer stays valid for as long as libcurl holds it.
        let key = Unmanaged.passUnretained(transfer).toOpaque()
        _ = ccurl_setopt_pointer(h, CURLOPT_PRIVATE, key)
        _ = ccurl_setopt_long(h, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(h, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        _ = ccurl_setopt_long(h, CURLOPT_PIPEWAIT, 1)
        _ = ccurl_setopt_long(h, CURLOPT_TCP_NODELAY, 1)
        _ = ccurl_setopt_long(h, CURLOPT_TCP_KEEPALIVE, 1)
        _ = ccurl_setopt_long(h, CURLOPT_TCP_KEEPIDLE, 60)
        _ = ccurl_setopt_long(h, CURLOPT_TCP_KEEPINTVL, 30)
        _ = ccurl_setopt_long(h, CURLOPT_MAXAGE_CONN, settings.maximumIdleSeconds)
        _ = ccurl_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeoutMs)
        _ = ccurl_setopt_long(h, CURLOPT_TIMEOUT_MS, settings.requestTimeoutMs)
        if let caFile = settings.caFile { _ = ccurl_setopt_string(h, CURLOPT_CAINFO, caFile) }
        _ = ccurl_setopt_callback(h, CURLOPT_WRITEFUNCTION, poolWrite)
        _ = ccurl_setopt_pointer(h, CURLOPT_WRITEDATA, key)
        _ = ccurl_setopt_callback(h, CURLOPT_HEADERFUNCTION, poolHeader)
        _ = ccurl_setopt_pointer(h, CURLOPT_HEADERDATA, key)
        // The pool outlives its easy handles (they are cleaned up on its thread before it ends).
        let pool = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_setopt_sockopt_callback(h, poolSocketOpened)
        _ = ccurl_setopt_pointer(h, CURLOPT_SOCKOPTDATA, pool)
        _ = ccurl_setopt_closesocket_callback(h, poolSocketClosing)
        _ = ccurl_setopt_pointer(h, CURLOPT_CLOSESOCKETDATA, pool)
        return transfer
    }

    /// Completes every transfer libcurl reports done.
    private func finishDone() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard ccurl_msg_is_done(message) != 0, let h = ccurl_msg_handle(message), let key = ccurl_private(h),
                let transfer = active.removeValue(forKey: key), let job = transfer.job
            else { continue }
            let code = ccurl_msg_result(message)
            let status = Int(ccurl_response_code(h))
            let result: HTTP2Result
            if code == CURLE_OK && status > 0 {
                result = HTTP2Result(status: status, headers: transfer.headers, body: transfer.body, error: nil)
            } else {
                let text = code == CURLE_OK ? "no response" : String(cString: curl_easy_strerror(code))
                result = HTTP2Result(status: 0, headers: [:], body: [], error: text)
            }
            release(transfer)
            job.completion(result)
        }
    }

    /// Takes the transfer off the multi handle and keeps its easy handle for the next request.
    private func release(_ transfer: Transfer) {
        curl_multi_remove_handle(multi, transfer.handle)
        curl_slist_free_all(transfer.headerList)
        transfer.headerList = nil
        transfer.job = nil
        transfer.headers.removeAll(keepingCapacity: true)
        transfer.body.removeAll(keepingCapacity: true)
        idle.append(transfer)
    }

    /// Frees an idle transfer's easy handle (at shutdown).
    private func free(_ transfer: Transfer) {
        curl_easy_cleanup(transfer.handle)
    }

    /// Body bytes of a response.
    fileprivate static func received(_ key: UnsafeMutableRawPointer, _ bytes: UnsafeRawBufferPointer) {
        let transfer = Unmanaged<Transfer>.fromOpaque(key).takeUnretainedValue()
        let room = maximumResponseBody - transfer.body.count
        if room > 0 { transfer.body.append(contentsOf: bytes.prefix(room)) }
    }

    /// One header line of a response (`name: value\r\n`; a status line starts the fields over).
    /// Only names and values are made into strings; the status line is recognised by its bytes.
    fileprivate static func header(_ key: UnsafeMutableRawPointer, _ bytes: UnsafeRawBufferPointer) {
        let transfer = Unmanaged<Transfer>.fromOpaque(key).takeUnretainedValue()
        if bytes.starts(with: "HTTP/".utf8) {
            transfer.headers.removeAll(keepingCapacity: true)
            return
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<colon]), as: UTF8.self).lowercased()
        var start = colon + 1
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, [0x20, 0x09, 0x0d, 0x0a].contains(bytes[end - 1]) { end -= 1 }
        transfer.headers[name] = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }
}

private let poolSocketOpened: ccurl_sockopt_callback = { pool, fd, purpose in
    if let pool { Unmanaged<HTTP2Pool>.fromOpaque(pool).takeUnretainedValue().opened(fd, purpose: purpose) }
    return Int32(CURL_SOCKOPT_OK)
}

private let poolSocketClosing: ccurl_closesocket_callback = { pool, fd in
    if let pool {
        Unmanaged<HTTP2Pool>.fromOpaque(pool).takeUnretainedValue().closing(fd)
    } else {
        close(fd)
    }
    return 0
}

private let poolWrite: ccurl_data_callback = { data, size, count, user in
    let n = size * count
    if let user, let data { HTTP2Pool.received(user, UnsafeRawBufferPointer(start: data, count: n)) }
    return n
}

private let poolHeader: ccurl_data_callback = { data, size, count, user in
    let n = size * count
    if let user, let data { HTTP2Pool.header(user, UnsafeRawBufferPointer(start: data, count: n)) }
    return n
}
