import CZMQ
import Support
import Synchronization
import Transport

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
package enum SocketDefaults {
    package static func apply(_ socket: ZMQSocket) throws {
        try socket.setHeartbeat(intervalMs: 1_000, timeoutMs: 5_000, ttlMs: 10_000)
        try socket.setReconnect(intervalMs: 100, maxMs: 1_000)
        try socket.set(ZMQ_CONNECT_TIMEOUT, 2_000)
    }

    /// The tuning of the publish/subscribe sockets (events, delivery): `apply`'s reconnect and
    /// connect timeout, no ZMTP heartbeats, and TCP keepalives instead (probes after 10 s idle,
    /// every 5 s, 3 unanswered: a dead peer is dropped in about 25 s).
    ///
    /// Why no heartbeats: a subscriber that falls behind fills its pipe, and libzmq then stops
    /// reading that connection, PINGs and PONGs included. A heartbeat timeout (its own, or the
    /// publisher's dropping it) then kills a healthy connection, and when the subscriber
    /// reconnects, libzmq 4.3.4 can abort the process: `Assertion failed: _input_stopped
    /// (stream_engine_base.cpp)`, zeromq/libzmq#3937, root cause in zeromq/libzmq#4830 (a stale
    /// write activation from the stalled engine reaches its replacement). It aborted
    /// NotificationService in `Benchmarks notification --group-likes 1000000`, where a million
    /// like events outran it. The kernel answers TCP keepalive probes whether or not the
    /// process reads, so they tell a dead peer from a slow one. A subscriber that lags keeps its
    /// connection; what the publisher drops at its high-water mark is a gap in the sequence,
    /// which the subscriber makes good (`EventFeed` replays events; a gateway reads what a stream
    /// missed from NotificationService).
    package static func applyStreaming(_ socket: ZMQSocket) throws {
        try socket.setHeartbeat(intervalMs: 0, timeoutMs: 0, ttlMs: 0)
        try socket.setReconnect(intervalMs: 100, maxMs: 1_000)
        try socket.set(ZMQ_CONNECT_TIMEOUT, 2_000)
        try socket.set(ZMQ_TCP_KEEPALIVE, 1)
        try socket.set(ZMQ_TCP_KEEPALIVE_IDLE, 10)
        try socket.set(ZMQ_TCP_KEEPALIVE_INTVL, 5)
        try socket.set(ZMQ_TCP_KEEPALIVE_CNT, 3)
    }
}
