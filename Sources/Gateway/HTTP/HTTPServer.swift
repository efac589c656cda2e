import CHTTPParser
import Foundation
import Shared
import Synchronization

/// An HTTP/1.1 server (RFC 9112) on one epoll event loop, with request parsing by the Node.js
/// project's http-parser (Debian `libhttp-parser-dev` 2.9.4).
///
/// Why not libmicrohttpd: it writes its own HTML answers to malformed requests (headers too
/// large, a bad request line, an unknown HTTP version or transfer coding) with no hook to make
/// them problem details; beyond its connection limit it closes new connections without a word;
/// and it gives every connection a 32 KiB memory pool, which is most of what an open
/// notification stream costs. This server owns the connections, so every answer is
/// `application/problem+json`, a connection past the limit gets a fast 503, and an idle stream
/// costs a few hundred bytes; http-parser keeps the message framing (RFC 9112 §6) to a
/// well-tested library.
///
/// Framing rules (RFC 9112 §6): `Content-Length` with `Transfer-Encoding`, several
/// `Content-Length` fields, or a transfer coding other than `chunked` are refused (400, or 501
/// for a coding it does not implement) and the connection is closed: no byte after them is ever
/// read as another request. A chunked body is decoded by `ChunkedDecoder`, not http-parser:
/// any framing RFC 9112 §7.1 does not allow is 400 and closes the connection, and trailer fields
/// are dropped (they never become headers). After `CONNECT` or a request with `Upgrade` (neither
/// is offered) the connection closes once answered. Absolute-form targets are taken as their
/// path (§3.2.2); an HTTP/1.0 client kept alive gets `Connection: keep-alive`; two
/// `Authorization` fields are 400. Requests on a connection are answered in order; while one is being
/// handled, bytes of the next wait unparsed. Handlers run as tasks; their responses come back
/// to the loop through a mailbox and an eventfd.
final class HTTPServer: Service {
    struct Configuration: Sendable {
        /// IPv4 address to bind.
        var host = "0.0.0.0"
        /// Port; 0 binds an ephemeral one.
        var port = 8080
        /// Connections open at once; past it a new connection gets 503 and is closed.
        var maxConnections = 10_000
        /// Connections one peer address may have open at once (peers in `sharedPeers` are not
        /// limited); past it a new connection from it gets 503 and is closed.
        var maxConnectionsPerPeer = Int.max
        /// A new connection must send its first byte within this many seconds, else it is closed
        /// (a connection that never sends holds a slot for nothing).
        var firstByteTimeoutSeconds = 10
        /// A stream's connection whose client has acknowledged none of what is waiting for it
        /// (in the gateway or in the kernel's send queue) for this many seconds is reset: a
        /// client that stopped reading must not hold memory, kernel buffers or a slot.
        var streamWriteTimeoutSeconds = 30
        /// An idle keep-alive connection is closed after this many seconds.
        var idleTimeoutSeconds = 120
        /// A request's line and headers must arrive within this many seconds of its first byte, and
        /// its body may pause no longer than this between reads (else 408): a 100 MiB upload over a
        /// slow link takes minutes, which is fine while bytes keep coming (nginx's
        /// `client_header_timeout` and `client_body_timeout`).
        var requestTimeoutSeconds = 30
        /// Largest request line plus header section, in bytes (else 431).
        var maxHeaderBytes = 16 * 1024
        /// Largest request target, in bytes (else 414).
        var maxTargetBytes = 8 * 1024
        /// Most header fields in one request (else 431).
        var maxHeaderFields = 100
        /// Largest body, in bytes, unless `bodyLimit` says otherwise for a route (else 413):
        /// API.md's 1 MiB.
        var maxBodyBytes = 1 << 20
        /// Bytes all bodies larger than `maxBodyBytes` (uploads) may hold at once, counted from
        /// their declared length (or their limit, when chunked) until their handler returns; an
        /// upload that would go over gets 503 `server_busy` with `Retry-After` before its body is
        /// read, so concurrent uploads cannot exhaust the gateway's memory.
        var maxLargeBodyBytesInFlight = 256 << 20
        /// Of `maxLargeBodyBytesInFlight`, what the connections of one peer address may hold at
        /// once (100 MiB by default, one video), so clients at one address cannot keep every
        /// upload out; peers in `sharedPeers` (trusted proxies, which carry many clients) are not
        /// limited.
        var maxLargeBodyBytesPerPeer = 100 << 20
        var sharedPeers: Set<String> = []
        /// An upload (a body holding a share of `maxLargeBodyBytesInFlight`) must bring at least
        /// this many bytes per second, measured over each `uploadRateWindowSeconds`, else 408 and
        /// its share is given back: a trickle cannot keep the budget (0: no minimum).
        var minUploadBytesPerSecond = 0
        /// The window the upload rate is measured over, in seconds.
        var uploadRateWindowSeconds = 30
        /// Bytes of response bodies all connections may hold in the gateway at once (64 MiB): a
        /// chunk of a `BodySource` body is fetched only once its size fits, and a body whose first
        /// chunk does not fit is answered 503 `server_busy` with `Retry-After` before its head.
        /// Complete (`.bytes`) bodies are counted but never refused.
        var maxResponseBufferBytes = 64 << 20
        /// Of `maxResponseBufferBytes`, what the connections of one peer address may hold at
        /// once (8 MiB); peers in `sharedPeers` are limited only by the total.
        var maxResponseBufferBytesPerPeer = 8 << 20
        /// `TCP_NOTSENT_LOWAT` of a connection sending a `BodySource` body, in bytes: the kernel
        /// takes no more of it than this beyond what is in flight, so "written to the socket"
        /// means close to "sent", and a reader that stops reading holds little kernel memory.
        var sourceNotSentLowWaterBytes = 128 << 10
    }

    let configuration: Configuration
    let logger: Logger
    let handler: @Sendable (HTTPRequest) async -> HTTPResponse
    /// The body limit of a request (method, raw path, its headers), or nil for the default.
    let bodyLimit: @Sendable (String, String, HTTPHeaders) -> Int?
    /// Told when the server answered by itself (status), for metrics.
    let onServerAnswer: @Sendable (Int) -> Void
    /// The answer to a well-formed request line whose method http-parser does not know (the
    /// method and the raw path): the router's 405 with `Allow` or 404 (default: 501).
    let unknownMethod: @Sendable (String, String) -> HTTPResponse?
    /// Checks an upload's credentials (its headers) before any of the upload budget is taken;
    /// nil lets it go on, a response (401, or 503 when the check cannot be made) refuses it.
    /// Reading from the connection is paused meanwhile.
    let authorizeUpload: @Sendable (HTTPHeaders) async -> HTTPResponse?

    enum Message: Sendable {
        case respond(UInt64, HTTPResponse)
        /// The outcome of `authorizeUpload` for a connection's upload (nil: go on).
        case authorized(UInt64, HTTPResponse?)
        case streamReady(UInt64)
        /// The next chunk of a `BodySource` body (nil: it failed).
        case chunk(UInt64, [UInt8]?)
        case stop
    }
    private let mailbox = Locked<[Message]>([])
    private let wake = Wakeup()
    private let openCount = Atomic<Int>(0)
    /// Response bytes held now (see `maxResponseBufferBytes`), and the most ever held at once.
    private let responseBuffered = Atomic<Int>(0)
    private let responseBufferedPeak = Atomic<Int>(0)
    /// Bytes reserved by uploads in flight: in all, and per peer address.
    private let largeBodies = Mutex<(total: Int, byPeer: [String: Int])>((0, [:]))
    private let done = Locked<(finished: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    private let loopBox = Locked<EventLoop?>(nil)

    init(
        configuration: Configuration, logger: Logger,
        bodyLimit: @escaping @Sendable (String, String, HTTPHeaders) -> Int? = { _, _, _ in nil },
        onServerAnswer: @escaping @Sendable (Int) -> Void = { _ in },
        unknownMethod: @escaping @Sendable (String, String) -> HTTPResponse? = { _, _ in nil },
        authorizeUpload: @escaping @Sendable (HTTPHeaders) async -> HTTPResponse? = { _ in nil },
        handler: @escaping @Sendable (HTTPRequest) async -> HTTPResponse
    ) {
        self.configuration = configuration
        self.logger = logger
        self.bodyLimit = bodyLimit
        self.onServerAnswer = onServerAnswer
        self.unknownMethod = unknownMethod
        self.authorizeUpload = authorizeUpload
        self.handler = handler
    }

    /// Connections open now.
    var openConnections: Int { openCount.load(ordering: .relaxed) }

    /// Bytes of responses the gateway holds now, in bytes (bodies waiting to be written).
    var responseBufferBytes: Int { responseBuffered.load(ordering: .relaxed) }
    /// The most bytes of responses the gateway has held at once since it started.
    var responseBufferPeakBytes: Int { responseBufferedPeak.load(ordering: .relaxed) }

    fileprivate func noteResponseBuffer(_ bytes: Int) {
        responseBuffered.store(bytes, ordering: .relaxed)
        if bytes > responseBufferedPeak.load(ordering: .relaxed) { responseBufferedPeak.store(bytes, ordering: .relaxed) }
    }

    /// Binds, listens and starts the loop thread.
    /// - Returns: the port bound.
    /// - Throws: `ServerError` when the address cannot be bound.
    func start() throws -> Int {
        let (fd, port) = try Self.listenSocket(host: configuration.host, port: configuration.port)
        let loop = try EventLoop(server: self, listenFD: fd)
        loopBox.withLock { $0 = loop }
        let thread = Thread { [self] in
            loop.run()
            let waiter = done.withLock { d -> CheckedContinuation<Void, Never>? in
                d.finished = true
                defer { d.waiter = nil }
                return d.waiter
            }
            waiter?.resume()
        }
        thread.name = "http.loop"
        thread.start()
        return port
    }

    /// Waits until the loop has stopped (after `shutdownGracefully()` or cancellation).
    func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let finished = done.withLock { d -> Bool in
                    if d.finished { return true }
                    d.waiter = c
                    return false
                }
                if finished { c.resume() }
            }
        } onCancel: {
            self.shutdownGracefully()
        }
    }

    /// Stops accepting, closes idle connections and streams, answers requests still in flight
    /// after 700 ms with 503, and stops the loop within a second.
    func shutdownGracefully() { post(.stop) }

    func post(_ message: Message) {
        mailbox.withLock { $0.append(message) }
        wake.signal()
    }

    fileprivate func takeMessages() -> [Message] {
        mailbox.withLock { m in
            defer { m.removeAll() }
            return m
        }
    }

    /// Bytes reserved by uploads being received or handled now.
    var largeBodyBytesInFlight: Int { largeBodies.withLock { $0.total } }

    /// Reserves `bytes` of the upload budget for a body from `peer`: false when the budget, or
    /// the peer's share of it, would be exceeded.
    fileprivate func reserveLargeBody(_ bytes: Int, peer: String) -> Bool {
        let configuration = self.configuration
        return largeBodies.withLock { state in
            guard state.total + bytes <= configuration.maxLargeBodyBytesInFlight else { return false }
            let held = state.byPeer[peer, default: 0]
            if !configuration.sharedPeers.contains(peer) {
                guard held + bytes <= configuration.maxLargeBodyBytesPerPeer else { return false }
            }
            state.total += bytes
            state.byPeer[peer] = held + bytes
            return true
        }
    }

    fileprivate func releaseLargeBody(_ bytes: Int, peer: String) {
        guard bytes > 0 else { return }
        largeBodies.withLock { state in
            state.total -= bytes
            let left = state.byPeer[peer, default: 0] - bytes
            state.byPeer[peer] = left > 0 ? left : nil
        }
    }

    fileprivate func connectionOpened() { openCount.add(1, ordering: .relaxed) }
    fileprivate func connectionClosed() { openCount.subtract(1, ordering: .relaxed) }
    fileprivate var wakeDescriptor: Int32 { wake.fd }
    fileprivate func drainWake() { wake.drain() }

    /// Creates, binds and listens on a TCP socket; returns it and the bound port.
    private static func listenSocket(host: String, port: Int) throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ServerError(message: "socket() failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
            close(fd)
            throw ServerError(message: "GATEWAY_HOST=\(host) is not an IPv4 address")
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 4096) == 0 else {
            let e = errno
            close(fd)
            throw ServerError(message: "cannot listen on \(host):\(port): errno \(e)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: actual.sin_port)))
    }
}

/// A server start failure.
struct ServerError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// An answer the server writes by itself (a request it cannot hand to the router).
struct ServerAnswer {
    var status: Int
    var code: String
    var detail: String
    /// A complete answer given by the gateway (e.g. the router's 405), used instead of the above.
    var given: HTTPResponse?

    init(status: Int, code: String, detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    init(_ response: HTTPResponse) {
        self.init(status: response.status, code: "", detail: "")
        given = response
    }

    /// The response: problem details, `Connection: close`.
    var response: HTTPResponse {
        var r = given ?? Problem(status: status, code: code, detail: detail, retryAfter: status == 503 ? 1 : nil).response
        r.headers.append(("Connection", "close"))
        return r
    }
}

/// The loop: the listening socket, every connection and the http-parser callbacks, all on one
/// thread (`http.loop`). Nothing here is touched from another thread; other threads talk to it
/// through `HTTPServer.post`.
private final class EventLoop: @unchecked Sendable {
    // @unchecked: created on the starting thread, then used only by the loop thread it is handed to.
    let server: HTTPServer
    let configuration: HTTPServer.Configuration
    let epfd: Int32
    var listenFD: Int32
    /// Kept open so that, out of descriptors, the loop can still accept and refuse (503).
    var reserveFD: Int32
    var connections: [UInt64: Connection] = [:]
    /// Open connections per peer address (peers in `sharedPeers` are not counted).
    var connectionsByPeer: [String: Int] = [:]
    var nextID: UInt64 = 2  // 0: the listening socket, 1: the wake eventfd
    let settings: UnsafeMutablePointer<http_parser_settings>
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    var stopDeadline: Int64?
    /// Response bytes held (see `maxResponseBufferBytes`): in all, and per peer address.
    var responseHeld = 0
    var responseHeldByPeer: [String: Int] = [:]
    /// Connections waiting for room in the response budget for their body's next chunk, in order.
    var budgetWaiters: [UInt64] = []
    /// Response bytes released since the heap was last trimmed.
    var releasedSinceTrim = 0
    var dateSecond: Int64 = 0
    var dateHeader = ""

    init(server: HTTPServer, listenFD: Int32) throws {
        self.server = server
        self.configuration = server.configuration
        self.listenFD = listenFD
        epfd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epfd >= 0 else { throw ServerError(message: "epoll_create1 failed: errno \(errno)") }
        reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        settings = .allocate(capacity: 1)
        settings.initialize(to: http_parser_settings())
        Self.installCallbacks(settings)
        http_parser_set_max_header_size(UInt32(configuration.maxHeaderBytes + configuration.maxTargetBytes))
        add(listenFD, id: 0, events: EPOLLIN.rawValue)
        add(server.wakeDescriptor, id: 1, events: EPOLLIN.rawValue)
    }

    func add(_ fd: Int32, id: UInt64, events: UInt32) {
        var event = epoll_event(events: events, data: epoll_data_t(u64: id))
        epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event)
    }

    func modify(_ c: Connection) {
        // Once the peer's half-close is seen, RDHUP is no longer asked for: it is level-triggered
        // and would wake the loop again and again until the response is written.
        var events = c.peerClosed ? 0 : EPOLLRDHUP.rawValue
        if c.wantsRead { events |= EPOLLIN.rawValue }
        if c.wantsWrite { events |= EPOLLOUT.rawValue }
        guard events != c.registeredEvents else { return }
        c.registeredEvents = events
        var event = epoll_event(events: events, data: epoll_data_t(u64: c.id))
        epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &event)
    }

    var now: Int64 { Timestamp.nowMs() }

    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var nextSweep = now + 1_000
        while true {
            let n = epoll_wait(epfd, &events, Int32(events.count), 250)
            if n < 0 && errno != EINTR { break }
            for i in 0..<max(0, Int(n)) {
                let id = events[i].data.u64
                let flags = events[i].events
                if id == 0 {
                    acceptAll()
                } else if id == 1 {
                    server.drainWake()
                } else if let c = connections[id] {
                    handle(c, flags: flags)
                }
            }
            for message in server.takeMessages() { deliver(message) }
            let t = now
            if t >= nextSweep || stopDeadline != nil {
                sweep(at: t)
                nextSweep = t + 1_000
            }
            if let deadline = stopDeadline, connections.isEmpty || t >= deadline + 300 { break }
        }
        for c in Array(connections.values) { closeNow(c) }
        if listenFD >= 0 { close(listenFD) }
        close(reserveFD)
        close(epfd)
        settings.deallocate()
        readBuffer.deallocate()
    }

    // MARK: Accepting

    func acceptAll() {
        while listenFD >= 0 {
            var addr = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(listenFD, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE:
                    // Out of descriptors: free the reserve, accept, refuse, take it back.
                    close(reserveFD)
                    let refused = accept4(listenFD, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
                    if refused >= 0 { refuse(refused) }
                    reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
                    if refused < 0 { return }
                    continue
                default: return
                }
            }
            if connections.count >= configuration.maxConnections || stopDeadline != nil {
                refuse(fd)
                continue
            }
            let peer = Self.address(addr)
            let counted = !configuration.sharedPeers.contains(peer)
            if counted {
                let held = connectionsByPeer[peer, default: 0]
                guard held < configuration.maxConnectionsPerPeer else {
                    refuse(fd)
                    continue
                }
                connectionsByPeer[peer] = held + 1
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let c = Connection(id: nextID, fd: fd, peer: peer, loop: self, now: now)
            c.countedForPeer = counted
            nextID += 1
            connections[c.id] = c
            server.connectionOpened()
            c.registeredEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
            add(fd, id: c.id, events: c.registeredEvents)
        }
    }

    /// Answers a connection there is no room for with 503 and closes it.
    func refuse(_ fd: Int32) {
        let bytes = serialize(
            ServerAnswer(
                status: 503, code: "server_busy", detail: "the gateway has no room for another connection; retry shortly"
            ).response, head: false, keepAlive: false)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
        close(fd)
        server.onServerAnswer(503)
    }

    static func address(_ storage: sockaddr_storage) -> String {
        var s = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if Int32(s.ss_family) == AF_INET {
            withUnsafePointer(to: &s) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var a = $0.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
                }
            }
        } else if Int32(s.ss_family) == AF_INET6 {
            withUnsafePointer(to: &s) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var a = $0.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
                }
            }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: Events

    func handle(_ c: Connection, flags: UInt32) {
        if flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
            closeNow(c)
            return
        }
        if flags & EPOLLIN.rawValue != 0 || flags & EPOLLRDHUP.rawValue != 0 { readable(c) }
        if connections[c.id] != nil, flags & EPOLLOUT.rawValue != 0 { flush(c) }
    }

    func readable(_ c: Connection) {
        while connections[c.id] != nil {
            let n = recv(c.fd, readBuffer.baseAddress, readBuffer.count, 0)
            if n > 0 {
                c.lastActivityMs = now
                c.receivedAny = true
                received(c, UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
                if !c.wantsRead { return }
                if n < readBuffer.count { return }
            } else if n == 0 {
                // The client closed (or half-closed) its side. The requests already received
                // (this one and any pipelined behind it) are still answered, then the
                // connection closes; anything else (an idle connection, a partial request, a
                // stream) ends now.
                switch c.phase {
                case .processing, .writing, .sourcing:
                    c.peerClosed = true
                    c.wantsRead = false
                    modify(c)
                default:
                    closeNow(c)
                }
                return
            } else {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { closeNow(c) }
                return
            }
        }
    }

    func received(_ c: Connection, _ bytes: UnsafeRawBufferPointer) {
        switch c.phase {
        case .reading where c.authorizingBytes != nil:
            c.input.append(contentsOf: bytes)  // the upload's body waits for its credentials' check
        case .reading:
            if c.input.isEmpty {
                parse(c, bytes)
            } else {
                c.input.append(contentsOf: bytes)
                let pending = c.input
                c.input = []
                pending.withUnsafeBytes { parse(c, $0) }
            }
        case .processing, .writing, .sourcing:
            // The next request, pipelined: kept unparsed (bounded) until this one is answered.
            c.input.append(contentsOf: bytes)
            if c.input.count > 64 * 1024 {
                c.wantsRead = false
                modify(c)
            }
        case .streaming, .draining:
            break  // nothing a client sends on a stream (or after an error) is read
        }
    }

    func parse(_ c: Connection, _ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if c.chunkedStarted {
            decodeChunked(c, bytes)
            return
        }
        if c.scanningHead, c.headHasFolding(bytes) {
            reject(c, ServerAnswer(status: 400, code: "bad_request", detail: "obsolete line folding in a header (RFC 9112 §5.2)"))
            return
        }
        c.parser.pointee.data = Unmanaged.passUnretained(c).toOpaque()
        let parsed = http_parser_execute(
            c.parser, settings, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count)
        let error = http_errno(rawValue: c.parser.pointee.http_errno)
        if let answer = c.answer {
            c.answer = nil
            reject(c, answer)
        } else if error == HPE_PAUSED, let declared = c.authorizingBytes {
            // An upload's head is in: its credentials are checked before it takes any budget,
            // and its body waits unread meanwhile.
            if parsed < bytes.count { c.input = Array(bytes[parsed...]) }
            c.wantsRead = false
            modify(c)
            authorize(c, declared)
        } else if error == HPE_PAUSED, c.chunked != nil {
            // A chunked request's head is in (http-parser stopped at the LF that ends it): its
            // body is decoded here, strictly, never by http-parser.
            guard parsed < bytes.count, bytes[parsed] == 0x0a else {
                reject(c, ServerAnswer(status: 400, code: "bad_request", detail: "the header section does not end with CRLF"))
                return
            }
            c.chunkedStarted = true
            decodeChunked(c, UnsafeRawBufferPointer(rebasing: bytes[(parsed + 1)...]))
        } else if error == HPE_PAUSED {
            // A whole request was dispatched; what follows it waits.
            if parsed < bytes.count { c.input = Array(bytes[parsed...]) }
        } else if error != HPE_OK {
            if error == HPE_INVALID_METHOD, let (method, path) = Self.requestLine(bytes),
                let given = server.unknownMethod(method, path)
            {
                reject(c, ServerAnswer(given))
            } else {
                reject(c, Self.answer(for: error, start: bytes))
            }
        } else if !c.output.isEmpty, case .reading = c.phase {
            flush(c)  // 100 Continue
        }
    }

    /// Feeds a chunked body to the connection's `ChunkedDecoder`: a framing error is 400 and
    /// closes the connection (RFC 9112 §7.1; nothing after it is read as a request); a whole
    /// body dispatches the request, and the bytes after it wait for the next one.
    func decodeChunked(_ c: Connection, _ bytes: UnsafeRawBufferPointer) {
        guard var decoder = c.chunked else { return }
        let outcome = decoder.feed(bytes) { c.appendBody($0) }
        c.chunked = decoder
        switch outcome {
        case .needMore:
            if !c.output.isEmpty, case .reading = c.phase { flush(c) }  // 100 Continue
        case .complete(let consumed):
            c.chunked = nil
            c.chunkedStarted = false
            dispatch(c)
            // http-parser was left paused after the head; the next request gets a fresh one.
            http_parser_init(c.parser, HTTP_REQUEST)
            if consumed < bytes.count { c.input = Array(bytes[consumed...]) }
        case .invalid(let why):
            reject(c, ServerAnswer(status: 400, code: "bad_request", detail: "\(why) (RFC 9112 §7.1)"))
        case .tooLarge:
            reject(c, ServerAnswer(status: 413, code: "payload_too_large", detail: "the body is over \(c.bodyLimit) bytes"))
        case .refused:
            reject(c, c.answer ?? ServerAnswer(status: 400, code: "bad_request", detail: "the body was refused"))
            c.answer = nil
        }
    }

    /// What to answer a request http-parser refused; `start` holds the bytes it was given.
    static func answer(for error: http_errno, start: UnsafeRawBufferPointer) -> ServerAnswer {
        switch error {
        case HPE_HEADER_OVERFLOW:
            return ServerAnswer(status: 431, code: "header_too_large", detail: "the request's header section is too large")
        case HPE_INVALID_TRANSFER_ENCODING:
            return ServerAnswer(
                status: 501, code: "unsupported_transfer_coding", detail: "only the chunked transfer coding is implemented")
        case HPE_UNEXPECTED_CONTENT_LENGTH:
            return ServerAnswer(
                status: 400, code: "ambiguous_length",
                detail: "Content-Length together with Transfer-Encoding, or more than one Content-Length (RFC 9112 §6.3)")
        case HPE_INVALID_CONTENT_LENGTH:
            return ServerAnswer(status: 400, code: "bad_request", detail: "Content-Length is not a number")
        case HPE_INVALID_CHUNK_SIZE:
            return ServerAnswer(status: 400, code: "bad_request", detail: "the chunk size is not a hex number (RFC 9112 §7.1)")
        case HPE_INVALID_METHOD:
            if requestLine(start) != nil {
                return ServerAnswer(status: 501, code: "method_not_implemented", detail: "the method is not implemented")
            }
            return ServerAnswer(status: 400, code: "bad_request", detail: "the request line is malformed")
        case HPE_INVALID_VERSION:
            return ServerAnswer(status: 505, code: "http_version_not_supported", detail: "only HTTP/1.0 and HTTP/1.1 are served")
        default:
            return ServerAnswer(
                status: 400, code: "bad_request",
                detail: "the request is malformed: \(String(cString: http_errno_description(error)))")
        }
    }

    /// The method and path of `bytes` if they start with `token SP target SP HTTP/`: a
    /// well-formed request line whose method http-parser does not know (RFC 9110 §9.1) rather
    /// than garbage (400).
    static func requestLine(_ bytes: UnsafeRawBufferPointer) -> (String, String)? {
        let line = bytes.prefix { $0 != 0x0d && $0 != 0x0a }
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        let tchar = Set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].count <= 32, parts[0].allSatisfy({ tchar.contains($0) }),
            !parts[1].isEmpty, parts[2].starts(with: Array("HTTP/".utf8))
        else { return nil }
        let target = parts[1].prefix { $0 != UInt8(ascii: "?") }
        return (String(decoding: parts[0], as: UTF8.self), String(decoding: target, as: UTF8.self))
    }

    // MARK: Requests

    /// Checks an upload's credentials off the loop; the answer comes back as `.authorized`.
    func authorize(_ c: Connection, _ declared: Int) {
        let server = self.server
        let id = c.id
        let headers = HTTPHeaders(fields: c.headers)
        Task { server.post(.authorized(id, await server.authorizeUpload(headers))) }
    }

    /// An upload's credentials were checked: refuse it, or take its share of the budget and
    /// read its body.
    func authorized(_ c: Connection, refusal: HTTPResponse?) {
        guard let declared = c.authorizingBytes else { return }
        c.authorizingBytes = nil
        // Only a 100 Continue can be waiting here, and a refused upload must not get it.
        let interim = c.output
        c.output = []
        c.outputOffset = 0
        if let refusal {
            reject(c, ServerAnswer(refusal))
            return
        }
        guard server.reserveLargeBody(declared, peer: c.peer) else {
            reject(c, ServerAnswer(status: 503, code: "server_busy", detail: "too many uploads are in progress; retry shortly"))
            return
        }
        c.reservedBodyBytes = declared
        c.lastActivityMs = now
        c.rateWindowStartMs = now
        c.rateWindowBytes = 0
        // A chunked body is decoded by `decodeChunked`: http-parser stays paused after its head.
        if c.chunked == nil { http_parser_pause(c.parser, 0) }
        if !c.wantsRead && !c.peerClosed {
            c.wantsRead = true
            modify(c)
        }
        c.output = interim
        if !c.output.isEmpty { flush(c) }  // 100 Continue
        guard connections[c.id] != nil, case .reading = c.phase else { return }
        let pending = c.input
        c.input = []
        if !pending.isEmpty { pending.withUnsafeBytes { parse(c, $0) } }
    }

    /// A whole request has arrived: hand it to the router as a task.
    func dispatch(_ c: Connection) {
        c.phase = .processing
        c.requestStartedMs = nil
        let request = c.takeRequest()
        let id = c.id
        let server = self.server
        let reserved = c.reservedBodyBytes
        let peer = c.peer
        c.reservedBodyBytes = 0
        Task {
            let response = await server.handler(request)
            server.releaseLargeBody(reserved, peer: peer)  // the body went with the request
            server.post(.respond(id, response))
        }
    }

    func deliver(_ message: HTTPServer.Message) {
        switch message {
        case .respond(let id, let response):
            guard let c = connections[id], case .processing = c.phase else {
                // The client went away before the answer: a stream must not stay registered.
                if case .stream(let stream) = response.body { stream.finished() }
                return
            }
            if c.peerClosed, case .stream(let stream) = response.body {
                stream.finished()
                closeNow(c)
                return
            }
            respond(c, response)
        case .authorized(let id, let refusal):
            if let c = connections[id], case .reading = c.phase { authorized(c, refusal: refusal) }
        case .streamReady(let id):
            if let c = connections[id], case .streaming = c.phase, c.output.isEmpty { pull(c) }
        case .chunk(let id, let bytes):
            guard let c = connections[id], case .sourcing(let source, let remaining) = c.phase else { return }
            c.chunkPending = false
            guard let bytes, !bytes.isEmpty, bytes.count <= remaining, !c.peerClosed else {
                if c.pendingHead != nil, !c.peerClosed {
                    // Nothing of the answer is sent yet: it becomes a 503, never a short 200.
                    c.pendingHead = nil
                    releaseHeld(c)
                    server.onServerAnswer(503)
                    respond(c, Problem.serviceUnavailable("the body could not be read; retry shortly").response)
                } else {
                    closeNow(c)  // the client went away, or the body cannot be finished
                }
                return
            }
            let left = remaining - bytes.count
            c.phase = left == 0 ? .writing(thenClose: !c.keepAlive) : .sourcing(source, remaining: left)
            c.lastActivityMs = now
            if bytes.count > c.heldBytes { hold(c, bytes.count - c.heldBytes) }
            if let head = c.pendingHead {
                c.pendingHead = nil
                c.output = head
                c.output.append(contentsOf: bytes)
            } else {
                c.output = bytes
            }
            c.outputOffset = 0
            flush(c)
        case .stop:
            beginStop()
        }
    }

    func respond(_ c: Connection, _ response: HTTPResponse) {
        if response.headers.contains(where: { $0.0.lowercased() == "connection" && $0.1.lowercased() == "close" }) {
            c.keepAlive = false
        }
        switch response.body {
        case .bytes(let body):
            c.output += serialize(response, head: c.isHead, keepAlive: c.keepAlive, http10: c.http10)
            c.phase = .writing(thenClose: !c.keepAlive)
            if !c.isHead { hold(c, body.count) }
        case .source(let source) where c.isHead || source.length == 0:
            c.output += serialize(response, head: c.isHead, keepAlive: c.keepAlive, http10: c.http10)
            c.phase = .writing(thenClose: !c.keepAlive)
        case .source(let source):
            // The head waits for the first chunk: if the budget has no room for it, or it cannot
            // be read, the answer is still free to be a 503.
            guard tryHold(c, min(source.length, source.chunkLimit)) else {
                server.onServerAnswer(503)
                respond(
                    c,
                    Problem(
                        status: 503, code: "server_busy", detail: "the gateway is sending too many responses; retry shortly",
                        retryAfter: 1
                    ).response)
                return
            }
            var lowWater = Int32(clamping: configuration.sourceNotSentLowWaterBytes)
            setsockopt(c.fd, Int32(IPPROTO_TCP), TCP_NOTSENT_LOWAT, &lowWater, socklen_t(MemoryLayout<Int32>.size))
            c.pendingHead = serialize(response, head: false, keepAlive: c.keepAlive, http10: c.http10)
            c.phase = .sourcing(source, remaining: source.length)
            startChunk(c, source)
            return
        case .stream(let stream) where c.isHead:
            // HEAD: the stream's head and nothing after it (RFC 9110 §9.3.2); the stream is
            // given up at once, so it holds no slot.
            c.output += serialize(response, head: true, keepAlive: false)
            c.keepAlive = false
            c.phase = .writing(thenClose: true)
            stream.finished()
        case .stream(let stream):
            c.output += serialize(response, head: false, keepAlive: false)
            c.keepAlive = false
            c.phase = .streaming(stream)
            c.lastDrainMs = now
            c.input = []
            let server = self.server
            let id = c.id
            stream.attach { server.post(.streamReady(id)) }
        }
        flush(c)
    }

    /// Refuses the request the connection is on: answer, then close without reading further.
    func reject(_ c: Connection, _ answer: ServerAnswer) {
        server.onServerAnswer(answer.status)
        // An upload refused before its handler gives its share of the budget back now, not when
        // the lingering close ends.
        server.releaseLargeBody(c.reservedBodyBytes, peer: c.peer)
        c.reservedBodyBytes = 0
        c.authorizingBytes = nil
        c.keepAlive = false
        c.input = []
        c.output += serialize(answer.response, head: false, keepAlive: false)
        c.phase = .writing(thenClose: true)
        flush(c)
    }

    /// The status line, headers and (unless `head`) body. `Content-Length` is the body's,
    /// also for HEAD (RFC 9110 §9.3.2); none for 1xx, 204 and 304 or a stream.
    /// An HTTP/1.0 client kept alive is told so (`Connection: keep-alive`, RFC 9112 §9.3 and
    /// Appendix C.2.2): without it, it would expect the connection to close.
    func serialize(_ r: HTTPResponse, head: Bool, keepAlive: Bool, http10: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(r.status) \(HTTPStatus.reason(r.status))\r\nDate: \(httpDate())\r\n"
        for (name, value) in r.headers { text += "\(name): \(value)\r\n" }
        var body: [UInt8] = []
        if case .bytes(let bytes) = r.body {
            if r.status != 204 && r.status != 304 && r.status >= 200 {
                text += "Content-Length: \(bytes.count)\r\n"
                if !head { body = bytes }
            }
        } else if case .source(let source) = r.body {
            text += "Content-Length: \(source.length)\r\n"
        }
        if !keepAlive && !r.headers.contains(where: { $0.0.lowercased() == "connection" }) {
            text += "Connection: close\r\n"
        } else if keepAlive && http10 {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8) + body
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7) for the `Date` header, computed once a second.
    func httpDate() -> String {
        let seconds = now / 1000
        if seconds != dateSecond {
            dateSecond = seconds
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            var out = [CChar](repeating: 0, count: 40)
            _ = strftime(&out, out.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            dateHeader = String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return dateHeader
    }

    // MARK: Writing

    func flush(_ c: Connection) {
        while c.outputOffset < c.output.count {
            let n = c.output.withUnsafeBytes {
                send(c.fd, $0.baseAddress! + c.outputOffset, $0.count - c.outputOffset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                c.outputOffset += n
                c.writtenTotal += n
                c.lastActivityMs = now
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                if !c.wantsWrite {
                    c.wantsWrite = true
                    modify(c)
                }
                return
            } else {
                closeNow(c)
                return
            }
        }
        c.output = []
        c.outputOffset = 0
        releaseHeld(c)
        if c.wantsWrite {
            c.wantsWrite = false
            modify(c)
        }
        switch c.phase {
        case .writing(let thenClose):
            if thenClose {
                lingeringClose(c)
            } else {
                c.phase = .reading
                c.scanningHead = true
                c.headLineLength = 0
                c.headLinesSeen = 0
                c.parser.pointee.data = Unmanaged.passUnretained(c).toOpaque()
                http_parser_pause(c.parser, 0)
                if !c.wantsRead && !c.peerClosed {
                    c.wantsRead = true
                    modify(c)
                }
                let pending = c.input
                c.input = []
                if !pending.isEmpty { pending.withUnsafeBytes { parse(c, $0) } }
                // A client that closed its side sends nothing more: once no whole request is
                // left to answer, the connection ends.
                if c.peerClosed, case .reading = c.phase { closeNow(c) }
            }
        case .streaming:
            pull(c)
        case .sourcing(let source, let remaining):
            requestChunk(c, source, remaining: remaining)
        default:
            break
        }
    }

    /// The body's next chunk, once the response budget has room for it: at once, or when
    /// bytes held by others are released (the connection waits in `budgetWaiters`).
    func requestChunk(_ c: Connection, _ source: BodySource, remaining: Int) {
        guard !c.chunkPending, !c.waitingForBudget else { return }
        if tryHold(c, min(remaining, source.chunkLimit)) {
            startChunk(c, source)
        } else {
            c.waitingForBudget = true
            budgetWaiters.append(c.id)
        }
    }

    /// Holds `bytes` of the response budget for `c` if the total and its peer's share allow.
    func tryHold(_ c: Connection, _ bytes: Int) -> Bool {
        guard responseHeld + bytes <= configuration.maxResponseBufferBytes else { return false }
        if !configuration.sharedPeers.contains(c.peer) {
            guard responseHeldByPeer[c.peer, default: 0] + bytes <= configuration.maxResponseBufferBytesPerPeer else {
                return false
            }
        }
        hold(c, bytes)
        return true
    }

    /// Counts `bytes` against the response budget for `c`, room or not.
    func hold(_ c: Connection, _ bytes: Int) {
        guard bytes > 0 else { return }
        responseHeld += bytes
        responseHeldByPeer[c.peer, default: 0] += bytes
        c.heldBytes += bytes
        server.noteResponseBuffer(responseHeld)
    }

    /// Gives back what `c` holds of the response budget, and lets waiting connections take it.
    func releaseHeld(_ c: Connection) {
        guard c.heldBytes > 0 else { return }
        responseHeld -= c.heldBytes
        let left = responseHeldByPeer[c.peer, default: 0] - c.heldBytes
        responseHeldByPeer[c.peer] = left > 0 ? left : nil
        releasedSinceTrim += c.heldBytes
        c.heldBytes = 0
        server.noteResponseBuffer(responseHeld)
        serveBudgetWaiters()
    }

    /// Starts the next chunk of every waiting connection the budget now has room for, in the
    /// order they began to wait (one held back by its peer's share does not block the others).
    func serveBudgetWaiters() {
        guard !budgetWaiters.isEmpty else { return }
        let waiting = budgetWaiters
        budgetWaiters = []
        for id in waiting {
            guard let c = connections[id], c.waitingForBudget, case .sourcing(let source, let remaining) = c.phase else {
                continue
            }
            if tryHold(c, min(remaining, source.chunkLimit)) {
                c.waitingForBudget = false
                startChunk(c, source)
            } else {
                budgetWaiters.append(id)
            }
        }
    }

    /// Gives freed heap back to the system once a good deal of response memory has been
    /// released (glibc keeps freed memory otherwise): `malloc_trim(0)`, looked up at run time.
    func trimHeapIfWorthIt() {
        guard releasedSinceTrim >= 8 << 20 else { return }
        releasedSinceTrim = 0
        _ = Self.mallocTrim?(0)
    }

    static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
    }()

    /// Asks the body's source for its next chunk (one at a time per connection); its room in the
    /// budget is already held.
    func startChunk(_ c: Connection, _ source: BodySource) {
        guard !c.chunkPending else { return }
        c.chunkPending = true
        let server = self.server
        let id = c.id
        Task {
            let bytes = try? await source.next()
            server.post(.chunk(id, bytes ?? nil))
        }
    }

    /// Writes what the stream has buffered; closes the connection once the stream is closed and sent.
    func pull(_ c: Connection) {
        guard case .streaming(let stream) = c.phase else { return }
        let (bytes, closed) = stream.take()
        if !bytes.isEmpty {
            c.output = bytes
            c.outputOffset = 0
            flush(c)
            return
        }
        if closed { lingeringClose(c) }
    }

    /// Ends the connection after an answer: no more writes, and what the client still sends is
    /// read and dropped for a moment (so the answer is not lost to a reset), then closed.
    func lingeringClose(_ c: Connection) {
        shutdown(c.fd, Int32(SHUT_WR))
        c.phase = .draining(until: now + 2_000)
        c.input = []
        if !c.wantsRead {
            c.wantsRead = true
            modify(c)
        }
    }

    /// Closes with a reset (`SO_LINGER` 0), so what the kernel still queues for a client that
    /// stopped reading is freed at once instead of lingering in an orphaned socket.
    func abort(_ c: Connection) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        closeNow(c)
    }

    func closeNow(_ c: Connection) {
        guard connections.removeValue(forKey: c.id) != nil else { return }
        server.releaseLargeBody(c.reservedBodyBytes, peer: c.peer)
        c.reservedBodyBytes = 0
        c.output = []
        c.pendingHead = nil
        releaseHeld(c)
        if c.countedForPeer, let held = connectionsByPeer[c.peer] {
            connectionsByPeer[c.peer] = held > 1 ? held - 1 : nil
        }
        epoll_ctl(epfd, EPOLL_CTL_DEL, c.fd, nil)
        close(c.fd)
        server.connectionClosed()
        if case .streaming(let stream) = c.phase { stream.finished() }
        c.release()
    }

    // MARK: Time

    func sweep(at t: Int64) {
        trimHeapIfWorthIt()
        for c in Array(connections.values) {
            switch c.phase {
            case .reading where c.authorizingBytes != nil:
                break  // the credentials' check has its own deadline (the RPC timeout)
            case .reading:
                let limit = Int64(configuration.requestTimeoutSeconds) * 1000
                let window = Int64(configuration.uploadRateWindowSeconds) * 1000
                if c.reservedBodyBytes > 0, configuration.minUploadBytesPerSecond > 0, t - c.rateWindowStartMs >= window {
                    // An upload must keep a minimum rate, else it gives its share of the budget back.
                    if c.rateWindowBytes * 1000 < configuration.minUploadBytesPerSecond * Int(t - c.rateWindowStartMs) {
                        reject(
                            c,
                            ServerAnswer(
                                status: 408, code: "request_timeout",
                                detail: "the upload is slower than \(configuration.minUploadBytesPerSecond) bytes per second"))
                        continue
                    }
                    c.rateWindowStartMs = t
                    c.rateWindowBytes = 0
                }
                if !c.receivedAny, t - c.lastActivityMs > Int64(configuration.firstByteTimeoutSeconds) * 1000 {
                    closeNow(c)  // not a byte since it connected
                } else if let started = c.requestStartedMs, c.receivingBody ? t - c.lastActivityMs > limit : t - started > limit {
                    reject(c, ServerAnswer(status: 408, code: "request_timeout", detail: "the request did not arrive in time"))
                } else if c.requestStartedMs == nil
                    && (t - c.lastActivityMs > Int64(configuration.idleTimeoutSeconds) * 1000 || stopDeadline != nil)
                {
                    closeNow(c)
                } else if let deadline = stopDeadline, t >= deadline {
                    closeNow(c)
                }
            case .sourcing where c.chunkPending || c.waitingForBudget:
                c.lastActivityMs = t  // waiting on the gateway's side (a chunk, or room), not the client's
            case .writing, .sourcing:
                if t - c.lastActivityMs > Int64(configuration.requestTimeoutSeconds) * 1000 { closeNow(c) }
            case .draining(let until):
                if t >= until { closeNow(c) }
            case .processing:
                if let deadline = stopDeadline, t >= deadline {
                    c.keepAlive = false
                    respond(c, ServerAnswer(status: 503, code: "service_unavailable", detail: "the gateway is stopping").response)
                }
            case .streaming:
                // Progress is what the client acknowledged (written less still queued in the
                // kernel); none for the write timeout while bytes wait, and it ends.
                var queued: Int32 = 0
                if ioctl(c.fd, UInt(TIOCOUTQ), &queued) != 0 { queued = 0 }
                let pending = c.output.count - c.outputOffset + Int(queued)
                let acknowledged = c.writtenTotal - Int(queued)
                if pending == 0 || acknowledged > c.acknowledgedAtCheck {
                    c.acknowledgedAtCheck = acknowledged
                    c.lastDrainMs = t
                } else if t - c.lastDrainMs > Int64(configuration.streamWriteTimeoutSeconds) * 1000 {
                    abort(c)
                }
            }
        }
    }

    func beginStop() {
        guard stopDeadline == nil else { return }
        stopDeadline = now + 700
        epoll_ctl(epfd, EPOLL_CTL_DEL, listenFD, nil)
        close(listenFD)
        listenFD = -1
        for c in Array(connections.values) {
            c.keepAlive = false
            if case .streaming(let stream) = c.phase { stream.close() }
        }
    }

    // MARK: http-parser callbacks

    static func connection(_ p: UnsafeMutablePointer<http_parser>?) -> Connection {
        Unmanaged<Connection>.fromOpaque(p!.pointee.data).takeUnretainedValue()
    }

    static func installCallbacks(_ s: UnsafeMutablePointer<http_parser_settings>) {
        s.pointee.on_message_begin = { p in
            EventLoop.connection(p).beginMessage()
            return 0
        }
        s.pointee.on_url = { p, at, length in
            EventLoop.connection(p).appendTarget(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_header_field = { p, at, length in
            EventLoop.connection(p).appendField(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_header_value = { p, at, length in
            EventLoop.connection(p).appendValue(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_headers_complete = { p in
            // 0: go on; -1: refuse (http-parser treats 1 and 2 as "no body", never wanted here).
            EventLoop.connection(p).headersComplete() ? 0 : -1
        }
        s.pointee.on_body = { p, at, length in
            EventLoop.connection(p).appendBody(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_message_complete = { p in
            let c = EventLoop.connection(p)
            c.loop?.dispatch(c)
            http_parser_pause(p, 1)
            return 0
        }
    }
}

/// One client connection: its parser, the request being received and what is being written.
/// Confined to the loop thread.
private final class Connection {
    enum Phase {
        /// Waiting for (or receiving) a request.
        case reading
        /// A request is with its handler.
        case processing
        /// Writing a response; then the next request, or close.
        case writing(thenClose: Bool)
        /// A Server-Sent Events response: written as the stream fills, until it closes.
        case streaming(EventStream)
        /// A `BodySource` response: `remaining` bytes still to come, one chunk at a time.
        case sourcing(BodySource, remaining: Int)
        /// Answered and half-closed: reading and dropping what the client still sends.
        case draining(until: Int64)
    }

    let id: UInt64
    let fd: Int32
    let peer: String
    weak var loop: EventLoop?
    let parser: UnsafeMutablePointer<http_parser>
    let limits: HTTPServer.Configuration
    var phase = Phase.reading
    var registeredEvents: UInt32 = 0
    var wantsRead = true
    var wantsWrite = false
    var lastActivityMs: Int64
    var requestStartedMs: Int64?
    /// The request's headers are in and its body is arriving (timed by the gap between reads).
    var receivingBody = false
    /// Bytes of the large-body budget this connection's upload holds (0: none).
    var reservedBodyBytes = 0
    /// Counted in `EventLoop.connectionsByPeer` (its peer is not a shared one).
    var countedForPeer = false
    /// The client has sent at least one byte (see `firstByteTimeoutSeconds`).
    var receivedAny = false
    /// Bytes handed to the socket in all; of them, what the client had acknowledged at the last
    /// check of a stream, and when it last had everything or acknowledged more (ms).
    var writtenTotal = 0
    var acknowledgedAtCheck = 0
    var lastDrainMs: Int64 = 0
    /// An upload's declared size while its credentials are checked (reading paused), else nil.
    var authorizingBytes: Int?
    /// Start (ms) and bytes received of the current upload-rate window.
    var rateWindowStartMs: Int64 = 0
    var rateWindowBytes = 0
    var keepAlive = true
    /// A chunk of a `BodySource` body has been asked for and not delivered yet.
    var chunkPending = false
    /// Waiting in `EventLoop.budgetWaiters` for room for the next chunk.
    var waitingForBudget = false
    /// Bytes of the response budget this connection holds (its output's body, or a chunk on its way).
    var heldBytes = 0
    /// A `BodySource` response's head, written together with its first chunk (nil once written).
    var pendingHead: [UInt8]?
    /// The client closed its side while its request was handled: answer, then close.
    var peerClosed = false
    /// An answer decided inside a parser callback, written once `http_parser_execute` returns.
    var answer: ServerAnswer?
    /// The decoder of the current request's chunked body (nil: not chunked); http-parser is
    /// paused after such a request's head and `chunkedStarted` once the decoder has the bytes.
    var chunked: ChunkedDecoder?
    var chunkedStarted = false
    /// The current request is HTTP/1.0: a kept-alive answer says `Connection: keep-alive`.
    var http10 = false
    var input: [UInt8] = []
    var output: [UInt8] = []
    var outputOffset = 0

    // The request being received.
    var target: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    var field: [UInt8] = []
    var value: [UInt8] = []
    var inValue = false
    var headerBytes = 0
    var body: [UInt8] = []
    var bodyLimit = 0
    var isHead = false
    /// Scanning the header section for line folding (see `headHasFolding`).
    var scanningHead = true
    var headLineLength = 0
    var headLinesSeen = 0

    init(id: UInt64, fd: Int32, peer: String, loop: EventLoop, now: Int64) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.loop = loop
        self.limits = loop.configuration
        self.lastActivityMs = now
        parser = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
    }

    func release() { parser.deallocate() }

    func beginMessage() {
        target = []
        headers = []
        field = []
        value = []
        inValue = false
        headerBytes = 0
        body = []
        receivingBody = false
        chunked = nil
        chunkedStarted = false
        requestStartedMs = loop?.now
    }

    func appendTarget(_ bytes: UnsafeRawBufferPointer) -> Bool {
        target.append(contentsOf: bytes)
        if target.count > limits.maxTargetBytes {
            answer = ServerAnswer(
                status: 414, code: "uri_too_long", detail: "the request target is over \(limits.maxTargetBytes) bytes")
            return false
        }
        return true
    }

    func appendField(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if inValue { commitHeader() }
        field.append(contentsOf: bytes)
        return countHeaderBytes(bytes.count)
    }

    func appendValue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        inValue = true
        value.append(contentsOf: bytes)
        return countHeaderBytes(bytes.count)
    }

    private func countHeaderBytes(_ n: Int) -> Bool {
        headerBytes += n
        if headerBytes > limits.maxHeaderBytes || headers.count >= limits.maxHeaderFields {
            answer = ServerAnswer(status: 431, code: "header_too_large", detail: "the request's header section is too large")
            return false
        }
        return true
    }

    private func commitHeader() {
        headers.append(
            (String(decoding: field, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self)))
        field = []
        value = []
        inValue = false
    }

    /// Whether the header section in `bytes` folds a line: a header line starting with a space
    /// or tab (RFC 9112 §5.2), which http-parser would join silently. Scans until the blank line
    /// that ends the header section, keeping its place across chunks.
    func headHasFolding(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for b in bytes {
            switch b {
            case 0x0a:
                if headLineLength == 0 && headLinesSeen > 0 {
                    scanningHead = false  // the blank line: the header section ends here
                    return false
                }
                if headLineLength > 0 { headLinesSeen += 1 }
                headLineLength = 0
            case 0x0d:
                continue
            default:
                if headLineLength == 0 && headLinesSeen > 0 && (b == 0x20 || b == 0x09) { return true }
                headLineLength += 1
            }
        }
        return false
    }

    /// Checks what http-parser leaves to the server; false refuses the request (`answer` set).
    func headersComplete() -> Bool {
        if inValue || !field.isEmpty { commitHeader() }
        let p = parser.pointee
        func refuse(_ status: Int, _ code: String, _ detail: String) -> Bool {
            answer = ServerAnswer(status: status, code: code, detail: detail)
            return false
        }
        if p.http_major != 1 {
            return refuse(505, "http_version_not_supported", "only HTTP/1.0 and HTTP/1.1 are served")
        }
        for (name, value) in headers {
            // RFC 9112 §5.1: no whitespace between a field name and its colon; §5.2: no
            // obsolete line folding.
            if name.isEmpty || name.utf8.contains(where: { $0 == 0x20 || $0 == 0x09 }) {
                return refuse(400, "bad_request", "whitespace in or after a header field name")
            }
            if value.utf8.contains(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0 }) {
                return refuse(400, "bad_request", "a header field value holds a line break (obsolete folding) or NUL")
            }
        }
        let hosts = headers.filter { $0.name == "host" }.count
        if p.http_minor >= 1 && hosts != 1 {
            return refuse(400, "bad_request", "an HTTP/1.1 request needs exactly one Host header (RFC 9112 §3.2)")
        }
        if headers.filter({ $0.name == "authorization" }).count > 1 {
            // Not a list (RFC 9110 §5.3, §11.6.2): which credentials would count is ambiguous.
            answer = ServerAnswer(
                Problem(
                    status: 400, code: "duplicate_header", detail: "the Authorization header appears more than once",
                    errors: [FieldError(field: "Authorization", code: "duplicate_header", message: "may appear only once")]
                ).response)
            return false
        }
        let codings = headers.filter { $0.name == "transfer-encoding" }.map(\.value)
        if !codings.isEmpty {
            let list = codings.joined(separator: ",").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }
            if list != ["chunked"] {
                return refuse(501, "unsupported_transfer_coding", "only the chunked transfer coding is implemented")
            }
        }
        let method = String(cString: http_method_str(http_method(rawValue: p.method)))
        isHead = method == "HEAD"
        target = Self.originForm(target)
        let path = String(decoding: target.prefix { $0 != UInt8(ascii: "?") }, as: UTF8.self)
        bodyLimit = loop?.server.bodyLimit(method, path, HTTPHeaders(fields: headers)) ?? limits.maxBodyBytes
        if p.flags & UInt32(F_CONTENTLENGTH.rawValue) != 0 {
            if p.content_length > UInt64(bodyLimit) {
                return refuse(413, "payload_too_large", "the body is over \(bodyLimit) bytes")
            }
        }
        if bodyLimit > limits.maxBodyBytes {
            // An upload: only with credentials (every upload route needs them, and a request
            // without any must not take a share of the budget), then counted against the budget
            // for large bodies before any of it is read.
            let authorization = headers.first { $0.name == "authorization" }?.value ?? ""
            guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
                answer = ServerAnswer(Problem.unauthorized("unauthorized", "an Authorization: Bearer token is required").response)
                return false
            }
            // The budget is taken only once the token is known to be valid (`authorize`): made-up
            // tokens must not hold it.
            authorizingBytes = p.flags & UInt32(F_CONTENTLENGTH.rawValue) != 0 ? Int(p.content_length) : bodyLimit
        }
        if p.flags & UInt32(F_CONTENTLENGTH.rawValue) != 0 {
            // Room for the declared body at once: growing by doubling would briefly hold it twice.
            body.reserveCapacity(Int(p.content_length))
        }
        if let expect = headers.first(where: { $0.name == "expect" })?.value {
            guard expect.lowercased() == "100-continue" else {
                return refuse(417, "expectation_failed", "only Expect: 100-continue is understood")
            }
            output += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)  // written when the parser returns
        }
        keepAlive = http_should_keep_alive(parser) != 0
        http10 = p.http_minor == 0
        if method == "CONNECT" || headers.contains(where: { $0.name == "upgrade" }) {
            // No tunnel and no other protocol is offered: the request is answered as a plain
            // one, then the connection closes, so what the client sends next (its tunnel's or
            // the new protocol's bytes) is never read as a request.
            keepAlive = false
        }
        receivingBody = true
        if p.flags & UInt32(F_CHUNKED.rawValue) != 0 {
            // The body is `ChunkedDecoder`'s (strict framing, trailers dropped); http-parser
            // stops here.
            chunked = ChunkedDecoder(limit: bodyLimit, maxTrailerBytes: limits.maxHeaderBytes)
            http_parser_pause(parser, 1)
        }
        if authorizingBytes != nil { http_parser_pause(parser, 1) }  // until `authorized`
        return true
    }

    /// The origin form of a request target: an absolute-form target (`http://host/path?q`,
    /// RFC 9112 §3.2.2, which a server must accept) loses its scheme and authority (`/path?q`;
    /// `/` when it has no path); any other target is returned as it is.
    static func originForm(_ target: [UInt8]) -> [UInt8] {
        guard target.first != UInt8(ascii: "/"), let colon = target.firstIndex(of: UInt8(ascii: ":")) else { return target }
        let scheme = String(decoding: target[..<colon], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https", target[colon...].starts(with: Array("://".utf8)) else { return target }
        let authority = colon + 3
        let end = target[authority...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? target.count
        var out = Array(target[end...])
        if out.first != UInt8(ascii: "/") { out.insert(UInt8(ascii: "/"), at: 0) }
        return out
    }

    func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if body.count + bytes.count > bodyLimit {
            answer = ServerAnswer(status: 413, code: "payload_too_large", detail: "the body is over \(bodyLimit) bytes")
            return false
        }
        body.append(contentsOf: bytes)
        rateWindowBytes += bytes.count
        return true
    }

    /// The request received, moved out of the connection.
    func takeRequest() -> HTTPRequest {
        let method = String(cString: http_method_str(http_method(rawValue: parser.pointee.method)))
        let targetText = String(decoding: target, as: UTF8.self)
        let path: String
        var query: String?
        if let q = targetText.firstIndex(of: "?") {
            path = String(targetText[..<q])
            query = String(targetText[targetText.index(after: q)...])
        } else {
            path = targetText
        }
        let request = HTTPRequest(
            method: method, path: path, rawQuery: query, headers: HTTPHeaders(fields: headers), body: body,
            peerAddress: peer)
        target = []
        headers = []
        body = []
        return request
    }
}
