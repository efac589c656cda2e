// HTTPServer: the server's configuration, what it serves (an `HTTPResponder`: routes with their
// body limits and handlers, the upload check), its start and stop, the mailbox other threads talk
// to its loop through, and the counters it keeps (connections, response bytes, the upload budget).
// The loop itself is `EventLoop` (EventLoop.swift and its extensions), one `Connection` per client.

import CHTTPParser
import Foundation
import ServiceKit
import Support
import Synchronization
import Transport

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
/// handled, bytes of the next wait unparsed. Handlers run as tasks on the loop thread
/// (`LoopExecutor`): a handler starts in the turn its request was read in, and a response it
/// returns there is written in that turn; what other threads send the loop comes through a
/// mailbox and an eventfd.
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
        /// Largest body, in bytes, unless the request's route says otherwise (else 413):
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
    /// Routes each request from its head, answers what cannot be routed, checks uploads'
    /// credentials (see `HTTPResponder`).
    let responder: any HTTPResponder

    enum Message: Sendable {
        case respond(UInt64, HTTPResponse)
        /// The outcome of `HTTPResponder.authorizeUpload` for a connection's upload (nil: go on).
        case authorized(UInt64, Problem?)
        case streamReady(UInt64)
        /// The next chunk of a `BodySource` body (nil: it failed).
        case chunk(UInt64, [UInt8]?)
        case stop
    }
    private let mailbox = Locked<[Message]>([])
    private let wake: Wakeup
    /// Runs the handlers on the loop thread (see `LoopExecutor`).
    let executor: LoopExecutor
    /// RPC clients whose sockets the loop drives (see `RPCPump`), set before `start()`.
    let drivenClients = Locked<[RPCClient]>([])
    private let openCount = Atomic<Int>(0)
    private let checkCount = Atomic<Int>(0)
    /// Response bytes held now (see `maxResponseBufferBytes`), and the most ever held at once.
    private let responseBuffered = Atomic<Int>(0)
    private let responseBufferedPeak = Atomic<Int>(0)
    /// Bytes reserved by uploads in flight: in all, and per peer address.
    private let largeBodies: Mutex<UploadBudget>
    private let done = Locked<(finished: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    private let loopBox = Locked<EventLoop?>(nil)

    /// - Parameters:
    ///   - responder: what the server serves.
    ///   - loop: the executor the handlers run on and the wakeup of the loop's thread, when they
    ///     are shared with RPC clients the loop drives (`drive(_:)`); nil: the server's own.
    init(
        configuration: Configuration, logger: Logger, responder: some HTTPResponder,
        loop: (executor: LoopExecutor, wakeup: Wakeup)? = nil
    ) {
        self.configuration = configuration
        self.largeBodies = Mutex(UploadBudget(configuration))
        self.logger = logger
        self.responder = responder
        let wake = loop?.wakeup ?? Wakeup()
        self.wake = wake
        self.executor = loop?.executor ?? LoopExecutor(wakeup: wake)
    }

    /// A server that hands every request to `handler`, with the default body limit (no routing).
    convenience init(
        configuration: Configuration, logger: Logger, loop: (executor: LoopExecutor, wakeup: Wakeup)? = nil,
        handler: @escaping @Sendable (HTTPRequest) async -> HTTPResponse
    ) {
        self.init(configuration: configuration, logger: logger, responder: HandlerResponder(handler: handler), loop: loop)
    }

    /// Has the loop drive these clients' sockets (clients made with `drivenBy:` this server's
    /// executor and wakeup), so that a handler's calls are sent and answered on the loop thread.
    /// Called before `start()`.
    func drive(_ clients: [RPCClient]) {
        drivenClients.withLock { $0 += clients }
    }

    /// Connections open now.
    var openConnections: Int { openCount.load(ordering: .relaxed) }
    /// Looks the loop has taken at a connection's deadlines since the start: one per deadline
    /// that came up, not one per connection per tick (`http_connection_checks_total`).
    var connectionChecks: Int { checkCount.load(ordering: .relaxed) }

    /// Bytes of responses the gateway holds now, in bytes (bodies waiting to be written).
    var responseBufferBytes: Int { responseBuffered.load(ordering: .relaxed) }
    /// The most bytes of responses the gateway has held at once since it started.
    var responseBufferPeakBytes: Int { responseBufferedPeak.load(ordering: .relaxed) }

    func noteResponseBuffer(_ bytes: Int) {
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

    /// Hands a message to the loop; from the loop thread itself (a handler run by `executor`)
    /// without a wakeup, as the loop takes its messages after running the handlers.
    func post(_ message: Message) {
        mailbox.withLock { $0.append(message) }
        if !executor.isLoopThread { wake.signal() }
    }

    /// Whether messages wait in the mailbox.
    var hasMessages: Bool { mailbox.withLock { !$0.isEmpty } }

    func takeMessages() -> [Message] {
        mailbox.withLock { m in
            defer { m.removeAll() }
            return m
        }
    }

    /// Bytes reserved by uploads being received or handled now.
    var largeBodyBytesInFlight: Int { largeBodies.withLock { $0.total } }

    /// Reserves `bytes` of the upload budget for a body from `peer`: false when the budget, or
    /// the peer's share of it, would be exceeded.
    func reserveLargeBody(_ bytes: Int, peer: String) -> Bool {
        largeBodies.withLock { $0.reserve(bytes, peer: peer) }
    }

    func releaseLargeBody(_ bytes: Int, peer: String) {
        guard bytes > 0 else { return }
        largeBodies.withLock { $0.release(bytes, peer: peer) }
    }

    func connectionOpened() { openCount.add(1, ordering: .relaxed) }
    func countCheck() { checkCount.add(1, ordering: .relaxed) }
    func connectionClosed() { openCount.subtract(1, ordering: .relaxed) }
    var wakeDescriptor: Int32 { wake.fd }
    func drainWake() { wake.drain() }

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
