import CCurl
import Foundation
import Shared

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
}

/// Callbacks of a Server-Sent Events stream, all called on the curl thread (keep them short).
struct StreamHandlers: Sendable {
    /// The response headers arrived; the argument is the HTTP status.
    var onOpen: @Sendable (Int) -> Void
    /// One event, with the monotonic ns at which its last byte was read.
    var onEvent: @Sendable (SSEEvent, UInt64) -> Void
    /// The stream ended: status and libcurl error text (nil when closed cleanly or by us).
    var onClose: @Sendable (Int, String?) -> Void
}

/// libcurl's multi interface on one dedicated thread: thousands of concurrent requests and
/// SSE streams, with open-loop scheduling (requests start at their `notBeforeNs`).
///
/// curl handles never leave that thread. Other threads enqueue commands under a lock and call
/// `curl_multi_wakeup`; completions and stream callbacks run on the curl thread.
final class CurlEngine: @unchecked Sendable {
    // @unchecked: `commands` is guarded by `lock`; `multi` is only used by the curl thread,
    // except `curl_multi_wakeup`, which libcurl documents as callable from any thread.
    private enum Command {
        case request(HTTPRequest, @Sendable (HTTPResult) -> Void)
        case stream(HTTPRequest, StreamHandlers, Int)
        case closeStreams
        case stop
    }

    private let lock = NSLock()
    private var commands: [Command] = []
    private let multi: UnsafeMutableRawPointer
    private var thread: Thread?
    private let stopped = DispatchSemaphore(value: 0)
    private let streamIds = Locked(0)

    /// At most this many requests (streams not counted) are in flight; later ones wait in the
    /// schedule (their latency still counts from the scheduled time, so overload shows).
    let maxInFlight: Int

    init(maxInFlight: Int = 2_000) {
        self.maxInFlight = maxInFlight
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard let m = curl_multi_init() else { fatalError("curl_multi_init failed") }
        multi = m
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 4096)
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

    /// Stops the thread after aborting everything in flight; waits for it.
    func shutdown() {
        enqueue(.stop)
        stopped.wait()
    }

    private func enqueue(_ command: Command) {
        lock.lock()
        commands.append(command)
        lock.unlock()
        curl_multi_wakeup(multi)
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

    private func loop() {
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
            while requestsInFlight < maxInFlight, let at = scheduled.peekTime, at <= now, let t = scheduled.pop() {
                start(t)
            }
            var stillRunning: Int32 = 0
            curl_multi_perform(multi, &stillRunning)
            var queued: Int32 = 0
            while let msg = curl_multi_info_read(multi, &queued) {
                guard ccurl_msg_is_done(msg) != 0, let h = ccurl_msg_handle(msg),
                    let key = ccurl_private(h), let t = active[key]
                else { continue }
                finish(t, code: ccurl_msg_result(msg), closedByUs: false)
            }
            var timeoutMs: Int32 = 50
            if let at = scheduled.peekTime {
                let now2 = Clock.nowNs()
                if at > now2 {
                    timeoutMs = Int32(min(50, (at - now2) / 1_000_000))
                } else {
                    // Due but held back by the in-flight cap: wait for a completion (or 5 ms).
                    timeoutMs = requestsInFlight >= maxInFlight ? 5 : 0
                }
            }
            if timeoutMs > 0 { curl_multi_poll(multi, nil, 0, timeoutMs, nil) }
        }
        for (_, t) in active { finish(t, code: CURLE_ABORTED_BY_CALLBACK, closedByUs: true) }
        while let t = scheduled.pop() {
            t.completion?(
                HTTPResult(
                    status: 0, body: [], error: "stopped",
                    scheduledNs: t.request.notBeforeNs ?? t.submittedNs, finishedNs: Clock.nowNs()))
        }
        stopped.signal()
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
        if t.stream == nil { _ = ccurl_setopt_long(h, CURLOPT_TIMEOUT_MS, t.request.timeoutMs) }
        _ = ccurl_setopt_callback(h, CURLOPT_WRITEFUNCTION, curlWrite)
        _ = ccurl_setopt_pointer(h, CURLOPT_WRITEDATA, key)
        _ = ccurl_setopt_callback(h, CURLOPT_HEADERFUNCTION, curlHeader)
        _ = ccurl_setopt_pointer(h, CURLOPT_HEADERDATA, key)
        var list: UnsafeMutablePointer<curl_slist>? = nil
        if let token = t.request.token {
            list = curl_slist_append(list, "Authorization: Bearer \(token)")
        }
        if t.stream != nil { list = curl_slist_append(list, "Accept: text/event-stream") }
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
            s.onClose(status, closedByUs ? nil : errorText)
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

    deinit { curl_multi_cleanup(multi) }
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
