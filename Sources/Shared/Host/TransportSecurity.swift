import CZMQ
import Synchronization

/// How a process's sockets authenticate and encrypt. `.plain` (the default for local runs) sends
/// ZMTP NULL; `CurveSecurity.fromEnvironment` builds the CURVE variant.
public struct TransportSecurity: Sendable {
    /// Applied to a server-side socket (ROUTER, PUB) before it binds.
    public var configureServer: @Sendable (ZMQSocket) throws -> Void
    /// Applied to a client-side socket (DEALER, SUB) before it connects, with the name of the
    /// service it connects to (`auth`, `profile`, `notification`).
    public var configureClient: @Sendable (ZMQSocket, _ service: String) throws -> Void

    public init(
        configureServer: @escaping @Sendable (ZMQSocket) throws -> Void,
        configureClient: @escaping @Sendable (ZMQSocket, _ service: String) throws -> Void
    ) {
        self.configureServer = configureServer
        self.configureClient = configureClient
    }

    /// No encryption, no authentication.
    public static let plain = TransportSecurity(configureServer: { _ in }, configureClient: { _, _ in })

    private static let processDefault = Locked<TransportSecurity>(.plain)

    /// The process-wide security every socket uses unless told otherwise; `ServiceRuntime`
    /// sets it from the environment at start.
    public static var current: TransportSecurity {
        get { processDefault.withLock { $0 } }
        set { processDefault.withLock { $0 = newValue } }
    }
}

/// Socket tuning shared by every service: heartbeats every 1 s with a 5 s timeout, reconnect
/// after 100 ms backing off to 1 s, and a TCP connect abandoned (and retried) after 2 s. (ZMTP 3.1
/// heartbeats, libzmq ≥ 4.2.)
///
/// The back-off ceiling: a reconnect attempt is one connection request to an address (and at most
/// one name lookup a second, see `PeerConnector`), so trying every second while a peer is away is
/// cheap, and a peer that comes back is reached within about a second rather than up to 5.
///
/// The connect timeout: client sockets connect to an address looked up by `PeerConnector`, which
/// looks again when a connect attempt fails; without it, an address that drops the connection
/// request (a service moved away from it) would hold a connect for the kernel's SYN retries (about
/// 2 minutes) with no failure to act on.
enum SocketDefaults {
    static func apply(_ socket: ZMQSocket) throws {
        try socket.setHeartbeat(intervalMs: 1_000, timeoutMs: 5_000, ttlMs: 10_000)
        try socket.setReconnect(intervalMs: 100, maxMs: 1_000)
        try socket.set(ZMQ_CONNECT_TIMEOUT, 2_000)
    }
}
