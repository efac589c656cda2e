// One client connection of the HTTP server: its state on the event loop, what it is writing and
// the request being received. The parser callbacks that fill the request are in
// Connection+Framing.swift.

import CHTTPParser

/// One client connection: its parser, the request being received and what is being written.
/// Confined to the loop thread.
final class Connection {
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
    /// Each change of what the connection waits for tells the loop, which moves its next look
    /// at the connection's deadlines earlier when the new deadline comes first (see
    /// `EventLoop.deadlinesChanged`); a later deadline waits for the look already scheduled.
    var phase = Phase.reading { didSet { loop?.deadlinesChanged(self) } }
    var registeredEvents: UInt32 = 0
    var wantsRead = true
    var wantsWrite = false
    var lastActivityMs: Int64
    var requestStartedMs: Int64? { didSet { loop?.deadlinesChanged(self) } }
    /// The request's headers are in and its body is arriving (timed by the gap between reads).
    var receivingBody = false { didSet { loop?.deadlinesChanged(self) } }
    /// Bytes of the large-body budget this connection's upload holds (0: none).
    var reservedBodyBytes = 0 { didSet { loop?.deadlinesChanged(self) } }
    /// Counted in `EventLoop.connectionsByPeer` (its peer is not a shared one).
    var countedForPeer = false
    /// The client has sent at least one byte (see `firstByteTimeoutSeconds`).
    var receivedAny = false
    /// Bytes handed to the socket in all; of them, what the client had acknowledged at the last
    /// check of a stream, and when it last had everything or acknowledged more (ms).
    var writtenTotal = 0
    var acknowledgedAtCheck = 0
    var lastDrainMs: Int64 = 0
    /// When a stream's progress is next checked (Unix ms; `Int64.max`: not watched, nothing
    /// was written since a check found everything acknowledged).
    var streamCheckDueMs = Int64.max
    /// When the loop next looks at this connection's deadlines (Unix ms; `Int64.max`: nothing to
    /// look for). A heap entry for another time is stale.
    var checkAtMs = Int64.max
    /// Closed and out of the loop's table.
    var closed = false
    /// An upload's declared size while its credentials are checked (reading paused), else nil.
    var authorizingBytes: Int? { didSet { loop?.deadlinesChanged(self) } }
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
    /// The request's method (set once its head is in).
    var method = HTTPMethod.get
    /// What answers the request, from its route (`HTTPResponder.route`, matched once, when the
    /// head arrived); nil until then.
    var respond: (@Sendable (HTTPRequest) async -> HTTPResponse)?
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
}
