import CCurl
import Foundation
import Support
import Transport

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP exchange's outcome.
struct HTTPResult: Sendable {
    /// HTTP status, or 0 when the transfer failed below HTTP (connection refused, timeout…).
    var status: Int
    var body: [UInt8]
    /// libcurl's error text when `status == 0`.
    var error: String?
    /// When the request was meant to go out (monotonic ns): the scheduled time for open-loop
    /// sends, else the time it was submitted.
    var scheduledNs: UInt64
    /// When the transfer finished (monotonic ns).
    var finishedNs: UInt64

    /// The body parsed as a JSON object (empty when it is not one).
    var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
}

/// What to send: method, absolute URL, bearer token, JSON body.
struct HTTPRequest: Sendable {
    var method: String
    var url: String
    var token: String?
    var body: [UInt8]?
    /// Monotonic ns before which the request must not start (open-loop schedule); nil = now.
    var notBeforeNs: UInt64?
    var timeoutMs: Int = 15_000
    /// Further header lines, each `Name: value` (e.g. `Last-Event-ID: 42`).
    var headers: [String] = []
}

/// How a Server-Sent Events stream ended.
struct StreamEnd: Sendable {
    /// The HTTP status of its response, 0 when none arrived (connection refused, reset…).
    var status: Int
    /// libcurl's error text; nil when the transfer ended cleanly or this side closed it.
    var error: String?
    /// Whether this side closed it (`closeStreams`, `shutdown`) rather than the server or the
    /// network.
    var closedByUs: Bool
}

/// Callbacks of a Server-Sent Events stream, all called on the curl thread (keep them short).
struct StreamHandlers: Sendable {
    /// The response headers arrived; the argument is the HTTP status.
    var onOpen: @Sendable (Int) -> Void
    /// One event, with the monotonic ns at which its last byte was read.
    var onEvent: @Sendable (SSEEvent, UInt64) -> Void
    /// The stream ended (called once per `openStream`, whether or not it opened).
    var onClose: @Sendable (StreamEnd) -> Void
}

/// libcurl's multi interface on one dedicated thread: thousands of concurrent requests and
/// SSE streams, with open-loop scheduling (requests start at their `notBeforeNs`).
///
/// The thread drives libcurl's event-driven multi_socket API over Linux epoll: libcurl tells it
/// which sockets to watch (`CURLMOPT_SOCKETFUNCTION` → `epoll_ctl`) and when to call back
/// (`CURLMOPT_TIMERFUNCTION`); the loop sleeps in `epoll_pwait2` until a socket is ready, the
/// curl timer expires, the next scheduled request is due or a command arrives (at most 50 ms),
/// and hands only the ready sockets to `curl_multi_socket_action`. Nothing polls every socket on
/// every iteration, so thousands of idle SSE streams cost no CPU.
///
/// curl handles never leave that thread. Other threads enqueue commands under a lock and signal
/// an eventfd in the same epoll set; completions and stream callbacks run on the curl thread.
final class CurlEngine: @unchecked Sendable {
    // @unchecked: `commands` is guarded by `lock`; `multi`, `epollFd` and all state below
    // "Curl thread" are only used by the curl thread (libcurl's socket and timer callbacks run
    // on it too, inside `curl_multi_socket_action` / `curl_multi_add_handle` / `…_remove_handle`);
    // `wakeup` is an eventfd, signalled from any thread.
    private enum Command {
        case request(HTTPRequest, @Sendable (HTTPResult) -> Void)
        case stream(HTTPRequest, StreamHandlers, Int)
        case closeStreams
        case stop
    }

    private let lock = NSLock()
    private var commands: [Command] = []
    private let multi: UnsafeMutableRawPointer
    /// The epoll set: curl's sockets (registered by `curlSocket`) and `wakeup.fd`.
    private let epollFd: Int32
    /// Signalled by `enqueue` when the command queue goes from empty to non-empty.
    private let wakeup = Wakeup()
    private var thread: Thread?
    private let stopped = DispatchSemaphore(value: 0)
    private let streamIds = Locked(0)
    /// `LOADTEST_CA_FILE`: the CA file that verifies an https:// gateway (a local CA's `ca.pem`, as
    /// `scripts/tls-local-ca` makes for `run-local --tls` and `container-test`); unset: the system's.
    private let caFile = ProcessInfo.processInfo.environment["LOADTEST_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }

    /// At most this many requests (streams not counted) are in flight; later ones wait in the
    /// schedule (their latency still counts from the scheduled time, so overload shows).
    let maxInFlight: Int

    init(maxInFlight: Int = 2_000) {
        self.maxInFlight = maxInFlight
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard let m = curl_multi_init() else { fatalError("curl_multi_init failed") }
        multi = m
        epollFd = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(epollFd >= 0, "epoll_create1 failed: errno \(errno)")
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        ev.data.fd = wakeup.fd
        precondition(epoll_ctl(epollFd, EPOLL_CTL_ADD, wakeup.fd, &ev) == 0, "epoll_ctl failed: errno \(errno)")
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 4096)
        // Unretained: the callbacks only run inside libcurl calls on the curl thread, which
        // ends (and cleans up `multi`) before `shutdown` returns.
        let me = Unmanaged.passUnretained(self).toOpaque()
        _ = ccurl_multi_setopt_socket_callback(multi, curlSocket)
        _ = ccurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me)
        _ = ccurl_multi_setopt_timer_callback(multi, curlTimer)
        _ = ccurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me)
        let t = Thread { [unowned self] in self.loop() }
        t.name = "curl"
        t.stackSize = 1 << 22
        thread = t
        t.start()
    }

    /// Sends a request; `completion` runs on the curl thread.
    func send(_ request: HTTPRequest, completion: @escaping @Sendable (HTTPResult) -> Void) {
        enqueue(.request(request, completion))
    }

    /// Sends a request and waits for its result.
    func send(_ request: HTTPRequest) async -> HTTPResult {
        await withCheckedContinuation { (c: CheckedContinuation<HTTPResult, Never>) in
            send(request) { c.resume(returning: $0) }
        }
    }

    /// Opens an SSE stream. - Returns: its id.
    @discardableResult
    func openStream(_ request: HTTPRequest, handlers: StreamHandlers) -> Int {
        let id = streamIds.withLock { v -> Int in
            v += 1
            return v
        }
        enqueue(.stream(request, handlers, id))
        return id
    }

    /// Closes every open stream (their `onClose` runs with status and nil error).
    func closeStreams() { enqueue(.closeStreams) }

    /// Stops the thread after aborting everything in flight (requests still scheduled complete
    /// with status 0, error "stopped"); waits for it. The thread then releases the multi handle
    /// and the epoll set, so the engine cannot be used afterwards.
    func shutdown() {
        enqueue(.stop)
        stopped.wait()
    }

    private func enqueue(_ command: Command) {
        lock.lock()
        let wasEmpty = commands.isEmpty
        commands.append(command)
        lock.unlock()
        // A non-empty queue has been signalled already: the loop drains the eventfd before it
        // takes the queue, so that signal is still pending or the queue is about to be taken.
        if wasEmpty { wakeup.signal() }
    }

    // MARK: Curl thread

    /// A transfer in flight (owned by the curl thread).
    private final class Transfer {
        let request: HTTPRequest
        let completion: (@Sendable (HTTPResult) -> Void)?
        let stream: StreamHandlers?
        var handle: UnsafeMutableRawPointer?
        var headers: UnsafeMutablePointer<curl_slist>?
        var body: [UInt8] = []
        var parser = SSEParser()
        var opened = false
        let submittedNs: UInt64

        init(
            request: HTTPRequest, completion: (@Sendable (HTTPResult) -> Void)?, stream: StreamHandlers?
        ) {
            self.request = request
            self.completion = completion
            self.stream = stream
            self.submittedNs = Clock.nowNs()
        }
    }

    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Requests (not streams) started and not finished; capped at `maxInFlight`.
    private var requestsInFlight = 0
    private var scheduled = TimeHeap<Transfer>()
    /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` (monotonic ns), as set
    /// by its timer callback; nil = no timer.
    private var curlTimerNs: UInt64?
    /// Whether `epoll_pwait2` (Linux 5.11+, ns timeouts) failed with ENOSYS: then `epoll_wait`.
    private var noPwait2 = false
    /// The longest sleep in `epoll_pwait2`, ns.
    private static let maxWaitNs: UInt64 = 50_000_000

    private func loop() {
        let capacity: Int32 = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        var running = true
        while running {
            lock.lock()
            let batch = commands
            commands.removeAll(keepingCapacity: true)
            lock.unlock()
            for c in batch {
                switch c {
                case .request(let r, let done):
                    let t = Transfer(request: r, completion: done, stream: nil)
                    // Through the schedule even when due now, so the in-flight cap applies.
                    scheduled.push(r.notBeforeNs ?? 0, t)
                case .stream(let r, let h, _):
                    start(Transfer(request: r, completion: nil, stream: h))
                case .closeStreams:
                    for (_, t) in active where t.stream != nil { finish(t, code: CURLE_OK, closedByUs: true) }
                case .stop:
                    running = false
                }
            }
            if !running { break }
            let now = Clock.nowNs()
            var started = false
            while requestsInFlight < maxInFlight, let at = scheduled.peekTime, at <= now, let t = scheduled.pop() {
                start(t)
                started = true
            }
            // Adding a handle sets curl's timer to 0 ms; kick it at once rather than after a wait.
            if started || curlTimerNs.map({ $0 <= Clock.nowNs() }) == true { fireCurlTimer() }
            readMessages()

            let n = wait(events, capacity: capacity, timeoutNs: nextTimeoutNs())
            for i in 0..<Int(n) {
                let fd = events[i].data.fd
                let bits = events[i].events
                if fd == wakeup.fd {
                    wakeup.drain()
                    continue
                }
                var action: Int32 = 0
                if bits & EPOLLIN.rawValue != 0 { action |= CURL_CSELECT_IN }
                if bits & EPOLLOUT.rawValue != 0 { action |= CURL_CSELECT_OUT }
                if bits & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { action |= CURL_CSELECT_ERR }
                var stillRunning: Int32 = 0
                curl_multi_socket_action(multi, fd, action, &stillRunning)
            }
            if curlTimerNs.map({ $0 <= Clock.nowNs() }) == true { fireCurlTimer() }
            // Completions free in-flight slots before the next round of starts.
            readMessages()
        }
        for (_, t) in active { finish(t, code: CURLE_ABORTED_BY_CALLBACK, closedByUs: true) }
        while let t = scheduled.pop() {
            t.completion?(
                HTTPResult(
                    status: 0, body: [], error: "stopped",
                    scheduledNs: t.request.notBeforeNs ?? t.submittedNs, finishedNs: Clock.nowNs()))
        }
        // Here, on the curl thread, while `self` is alive: cleanup may still call `curlSocket`.
        curl_multi_cleanup(multi)
        close(epollFd)
        stopped.signal()
    }

    /// How long the loop may sleep, ns: until the curl timer, the next scheduled start (unless
    /// the in-flight cap holds it back: a completion is a socket event, which wakes the loop), or
    /// `maxWaitNs`, whichever comes first; 0 when one of them is due.
    private func nextTimeoutNs() -> UInt64 {
        let now = Clock.nowNs()
        var timeout = Self.maxWaitNs
        if let at = curlTimerNs { timeout = min(timeout, at > now ? at - now : 0) }
        if requestsInFlight < maxInFlight, let at = scheduled.peekTime {
            timeout = min(timeout, at > now ? at - now : 0)
        }
        return timeout
    }

    /// `epoll_pwait2` with a ns timeout (so scheduled starts are neither late nor busy-waited
    /// for); `epoll_wait` with the timeout rounded up to ms on kernels without it.
    /// - Returns: the number of ready events (0 on timeout or EINTR).
    private func wait(_ events: UnsafeMutablePointer<epoll_event>, capacity: Int32, timeoutNs: UInt64) -> Int32 {
        var n: Int32
        if !noPwait2 {
            var ts = timespec(tv_sec: Int(timeoutNs / 1_000_000_000), tv_nsec: Int(timeoutNs % 1_000_000_000))
            n = epoll_pwait2(epollFd, events, capacity, &ts, nil)
            if n < 0 && errno == ENOSYS {
                noPwait2 = true
                n = epoll_wait(epollFd, events, capacity, Int32((timeoutNs + 999_999) / 1_000_000))
            }
        } else {
            n = epoll_wait(epollFd, events, capacity, Int32((timeoutNs + 999_999) / 1_000_000))
        }
        return max(n, 0)
    }

    /// Lets libcurl act on its expired timeouts, then re-reads its next one.
    ///
    /// The timer callback only reports changes of libcurl's earliest timeout; when a call leaves
    /// it unchanged (nothing had expired by libcurl's clock yet, or a kick after adding handles
    /// found nothing due) no callback comes, so `curl_multi_timeout` says what is still pending.
    private func fireCurlTimer() {
        var stillRunning: Int32 = 0
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &stillRunning)
        var timeoutMs = -1
        curl_multi_timeout(multi, &timeoutMs)
        setTimer(timeoutMs)
    }

    /// Finishes every transfer libcurl reports done.
    private func readMessages() {
        var queued: Int32 = 0
        while let msg = curl_multi_info_read(multi, &queued) {
            guard ccurl_msg_is_done(msg) != 0, let h = ccurl_msg_handle(msg),
                let key = ccurl_private(h), let t = active[key]
            else { continue }
            finish(t, code: ccurl_msg_result(msg), closedByUs: false)
        }
    }

    /// libcurl's socket callback: watch `fd` for `what` (CURL_POLL_IN / OUT / INOUT) or stop
    /// watching it (CURL_POLL_REMOVE; the socket may be closed already).
    /// - Returns: 0, or -1 when epoll refuses the change (libcurl then fails the transfer).
    fileprivate func watch(_ fd: Int32, _ what: Int32) -> Int32 {
        var events: UInt32 = 0
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= EPOLLIN.rawValue }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= EPOLLOUT.rawValue }
        if events == 0 {
            // REMOVE (or NONE). ENOENT / EBADF: closing the fd removed it already.
            _ = epoll_ctl(epollFd, EPOLL_CTL_DEL, fd, nil)
            return 0
        }
        var ev = epoll_event()
        ev.events = events
        ev.data.fd = fd
        // ADD first: curl reports a socket's first interest and its changes alike, and a closed
        // fd leaves the set by itself (so its number can come back as a new socket).
        if epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev) == 0 { return 0 }
        if errno == EEXIST && epoll_ctl(epollFd, EPOLL_CTL_MOD, fd, &ev) == 0 { return 0 }
        return -1
    }

    /// libcurl's timer callback: act on `CURL_SOCKET_TIMEOUT` in `timeoutMs` (-1 = no timer).
    fileprivate func setTimer(_ timeoutMs: Int) {
        curlTimerNs = timeoutMs < 0 ? nil : Clock.nowNs() + UInt64(timeoutMs) * 1_000_000
    }

    /// Streams opened so far (each takes the next source address slot).
    private var streamsStarted = 0

    /// Streams per loopback source address (a quarter of the gateway's default per-address cap).
    static let streamsPerSourceAddress = 250

    /// Streams that keep the default source address before any is spread (half the gateway's
    /// default per-address cap, GATEWAY_MAX_STREAMS_PER_ADDRESS = 1,000).
    static let streamsOnDefaultSource = 500

    /// For a gateway on IPv4 loopback, the source address of the `index`th stream: the default
    /// for the first `streamsOnDefaultSource`, then 127.1.x.y, `streamsPerSourceAddress` streams
    /// each (all of 127.0.0.0/8 is loopback on Linux, so nothing needs configuring). Nil for the
    /// default source and for any other gateway.
    ///
    /// Small runs keep the default because a port published by DNAT (rootful podman, CNI
    /// portmap) masquerades only connections from 127.0.0.1: the container's reply to 127.1.x.y
    /// has no route back, and such a stream never opens (container-test's LoadTest runs).
    static func streamSource(url: String, index: Int) -> String? {
        guard url.hasPrefix("http://127.") || url.hasPrefix("http://localhost") else { return nil }
        guard index >= streamsOnDefaultSource else { return nil }
        let slot = (index - streamsOnDefaultSource) / streamsPerSourceAddress
        return "127.1.\(slot / 254 % 256).\(slot % 254 + 1)"
    }

    private func start(_ t: Transfer) {
        guard let h = curl_easy_init() else {
            t.completion?(
                HTTPResult(
                    status: 0, body: [], error: "curl_easy_init failed", scheduledNs: t.submittedNs,
                    finishedNs: Clock.nowNs()))
            return
        }
        t.handle = h
        if t.stream == nil { requestsInFlight += 1 }
        let key = Unmanaged.passUnretained(t).toOpaque()
        active[key] = t
        _ = ccurl_setopt_string(h, CURLOPT_URL, t.request.url)
        _ = ccurl_setopt_pointer(h, CURLOPT_PRIVATE, key)
        _ = ccurl_setopt_long(h, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(h, CURLOPT_TCP_NODELAY, 1)
        _ = ccurl_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, 10_000)
        if let caFile { _ = ccurl_setopt_string(h, CURLOPT_CAINFO, caFile) }
        if t.stream == nil { _ = ccurl_setopt_long(h, CURLOPT_TIMEOUT_MS, t.request.timeoutMs) }
        if t.stream != nil, let source = Self.streamSource(url: t.request.url, index: streamsStarted) {
            // Spread over source addresses, as many clients would be: the gateway caps streams
            // per address (GATEWAY_MAX_STREAMS_PER_ADDRESS, default 1,000).
            _ = ccurl_setopt_string(h, CURLOPT_INTERFACE, "host!" + source)
        }
        if t.stream != nil { streamsStarted += 1 }
        _ = ccurl_setopt_callback(h, CURLOPT_WRITEFUNCTION, curlWrite)
        _ = ccurl_setopt_pointer(h, CURLOPT_WRITEDATA, key)
        _ = ccurl_setopt_callback(h, CURLOPT_HEADERFUNCTION, curlHeader)
        _ = ccurl_setopt_pointer(h, CURLOPT_HEADERDATA, key)
        var list: UnsafeMutablePointer<curl_slist>? = nil
        if let token = t.request.token {
            list = curl_slist_append(list, "Authorization: Bearer \(token)")
        }
        if t.stream != nil { list = curl_slist_append(list, "Accept: text/event-stream") }
        for line in t.request.headers { list = curl_slist_append(list, line) }
        let method = t.request.method
        if let body = t.request.body {
            list = curl_slist_append(list, "Content-Type: application/json")
            _ = ccurl_setopt_long(h, CURLOPT_POSTFIELDSIZE, body.count)
            body.withUnsafeBufferPointer { p in
                _ = ccurl_setopt_pointer(
                    h, CURLOPT_COPYPOSTFIELDS,
                    UnsafeMutableRawPointer(mutating: p.baseAddress ?? UnsafePointer(bitPattern: 1)!))
            }
        } else if method == "PUT" || method == "POST" || method == "PATCH" {
            _ = ccurl_setopt_long(h, CURLOPT_POSTFIELDSIZE, 0)
            _ = ccurl_setopt_string(h, CURLOPT_COPYPOSTFIELDS, "")
        }
        if method != "GET" && method != "POST" {
            _ = ccurl_setopt_string(h, CURLOPT_CUSTOMREQUEST, method)
        }
        // No "Expect: 100-continue" round trip.
        list = curl_slist_append(list, "Expect:")
        t.headers = list
        _ = ccurl_setopt_slist(h, CURLOPT_HTTPHEADER, list)
        curl_multi_add_handle(multi, h)
    }

    private func finish(_ t: Transfer, code: CURLcode, closedByUs: Bool) {
        guard let h = t.handle else { return }
        let status = Int(ccurl_response_code(h))
        let errorText: String? = code == CURLE_OK ? nil : String(cString: curl_easy_strerror(code))
        curl_multi_remove_handle(multi, h)
        curl_easy_cleanup(h)
        curl_slist_free_all(t.headers)
        t.handle = nil
        t.headers = nil
        active[Unmanaged.passUnretained(t).toOpaque()] = nil
        if t.stream == nil { requestsInFlight -= 1 }
        if let s = t.stream {
            s.onClose(StreamEnd(status: status, error: closedByUs ? nil : errorText, closedByUs: closedByUs))
        } else {
            let ok = code == CURLE_OK
            t.completion?(
                HTTPResult(
                    status: ok ? status : 0, body: t.body, error: ok ? nil : errorText,
                    scheduledNs: t.request.notBeforeNs ?? t.submittedNs, finishedNs: Clock.nowNs()))
        }
    }

    /// Body bytes: accumulated for requests, parsed incrementally for streams.
    fileprivate static func received(_ key: UnsafeMutableRawPointer, _ bytes: UnsafeRawBufferPointer) {
        let t = Unmanaged<Transfer>.fromOpaque(key).takeUnretainedValue()
        if let s = t.stream {
            let now = Clock.nowNs()
            t.parser.feed(bytes) { s.onEvent($0, now) }
        } else {
            t.body.append(contentsOf: bytes)
        }
    }

    /// A header line; the blank line ending the headers opens a stream.
    fileprivate static func header(_ key: UnsafeMutableRawPointer, _ bytes: UnsafeRawBufferPointer) {
        let t = Unmanaged<Transfer>.fromOpaque(key).takeUnretainedValue()
        guard let s = t.stream, !t.opened, bytes.count <= 2, let h = t.handle else { return }
        t.opened = true
        s.onOpen(Int(ccurl_response_code(h)))
    }
}

private let curlWrite: ccurl_data_callback = { data, size, count, user in
    let n = size * count
    if let user, let data { CurlEngine.received(user, UnsafeRawBufferPointer(start: data, count: n)) }
    return n
}

private let curlHeader: ccurl_data_callback = { data, size, count, user in
    let n = size * count
    if let user, let data { CurlEngine.header(user, UnsafeRawBufferPointer(start: data, count: n)) }
    return n
}

private let curlSocket: ccurl_socket_callback = { _, fd, what, user, _ in
    guard let user else { return -1 }
    return Unmanaged<CurlEngine>.fromOpaque(user).takeUnretainedValue().watch(fd, what)
}

private let curlTimer: ccurl_timer_callback = { _, timeoutMs, user in
    guard let user else { return -1 }
    Unmanaged<CurlEngine>.fromOpaque(user).takeUnretainedValue().setTimer(timeoutMs)
    return 0
}
