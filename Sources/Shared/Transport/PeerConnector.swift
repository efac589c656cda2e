import CZMQ
import Support
import Wire

/// Keeps a client socket (DEALER, SUB) connected to a service named in a `tcp://host:port`
/// endpoint, looking the host name up itself rather than letting libzmq do it.
///
/// Why: libzmq looks a host name up with a blocking `getaddrinfo` on the context's I/O thread, at
/// every connect and reconnect, and while that call waits for a DNS server that does not answer,
/// the I/O thread does nothing else: no socket of the process connects, hands a message over,
/// accepts a client or sends a heartbeat. glibc waits 5 s per query, twice, for the name with and
/// without its search domain: 20 s per lookup. Under podman 4.3 (Debian 12) a container's DNS
/// queries can go unanswered for up to a minute after the stack starts (deploy/README.md,
/// "Podman"), and a NotificationService restarted then sat in one such call 20 s and in the next
/// another 20 s: all its calls to ProfileService and AuthService failed with 503 for 30 to 45 s,
/// even where the address was known.
///
/// So libzmq is only ever given an address: this connects the socket to the address found (see
/// `HostLookup`, which does not wait on an unanswered query either), and looks the name up again
/// when the connection drops or a connect attempt fails, since a service stopped and started may
/// come back at another address; a new address is connected and the old one disconnected.
/// Endpoints that hold an address literal, and other transports, are connected as given.
///
/// Confined to the socket's thread, like the socket: the owner polls `monitor`, passes what it
/// reads to `receiveEvents()`, calls `service(nowMs:)` on every turn of its loop, and polls the
/// `Wakeup` it gave, which rings when a lookup finishes.
package final class PeerConnector {
    /// The socket's monitor (a PAIR on an inproc endpoint): poll it for readability.
    package let monitor: ZMQSocket
    /// The endpoint as configured.
    package let endpoint: String
    /// Whether a connection is up (its handshake done, not disconnected since).
    private(set) var isConnected = false
    /// The endpoint libzmq is connected (or connecting) to: the address form of `endpoint`.
    private(set) var current: String?

    private let socket: ZMQSocket
    private let tcp: TCPEndpoint?
    private let lookup: HostLookup?
    private let logger: Logger
    /// How long an attempt is waited for before another starts; also the least time between two
    /// lookups, in ms.
    private let retryMs: Int64
    private var lookupWanted = false
    /// When the last attempt started (ms), nil before the first.
    private var lastAttempt: Int64?
    private var failuresInARow = 0

    /// The monitor events the connector acts on, which its owner gets from `receiveEvents()`.
    package static let events = ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECT_RETRIED

    /// Starts monitoring `socket` and connects it: at once when `endpoint` needs no lookup, else
    /// once the first lookup answers (from `service(nowMs:)`).
    /// - Parameters:
    ///   - wakeup: rung when a lookup finishes; the owner's loop must poll it.
    ///   - retryMs: see the property (1 s).
    ///   - resolver: looks a host name up (default `HostLookup.resolve`; tests give a stand-in).
    /// - Throws: `ZMQError` when the monitor cannot be set up or libzmq refuses the endpoint.
    package init(
        socket: ZMQSocket, endpoint: String, wakeup: Wakeup, logger: Logger, retryMs: Int64 = 1_000,
        resolver: @escaping @Sendable (String) -> HostLookup.Outcome = HostLookup.resolve
    ) throws {
        self.socket = socket
        self.endpoint = endpoint
        self.logger = logger
        self.retryMs = retryMs
        let monitorEndpoint = "inproc://peer-monitor-\(RandomID.make())"
        try socket.monitor(monitorEndpoint, events: Self.events)
        monitor = try ZMQSocket(socket.context, .pair)
        try monitor.connect(monitorEndpoint)
        if let tcp = TCPEndpoint(endpoint), !tcp.hostIsAddress {
            self.tcp = tcp
            lookup = HostLookup(host: tcp.host, resolver: resolver) { wakeup.signal() }
            lookupWanted = true
        } else {
            tcp = nil
            lookup = nil
            try socket.connect(endpoint)
            current = endpoint
        }
    }

    /// Reads every event waiting on `monitor` and acts on it.
    /// - Returns: the events' codes (`ZMQ_EVENT_*`), oldest first.
    /// - Throws: `ZMQError` (`.contextTerminated` when the context shuts down).
    package func receiveEvents() throws -> [Int32] {
        var codes: [Int32] = []
        while let event = try monitor.receive(dontWait: true) {
            guard let first = event.first, first.count >= 2 else { continue }
            let code = Int32(first[0]) | (Int32(first[1]) << 8)
            codes.append(code)
            if code == ZMQ_EVENT_HANDSHAKE_SUCCEEDED {
                isConnected = true
                lookupWanted = false
                lookup?.reset()
            } else if code == ZMQ_EVENT_DISCONNECTED || code == ZMQ_EVENT_CONNECT_RETRIED {
                if code == ZMQ_EVENT_DISCONNECTED { isConnected = false }
                // The service may have come back elsewhere: look again (at most once per retryMs).
                if lookup != nil && !isConnected { lookupWanted = true }
            }
        }
        return codes
    }

    /// Connects to what a finished lookup found and starts the attempts that are due.
    /// - Returns: ms until it wants to be called again (nil: only when the wakeup rings or a
    ///   monitor event arrives).
    package func service(nowMs now: Int64) -> Int64? {
        guard let lookup, let tcp, lookupWanted else { return nil }
        switch lookup.takeResult() {
        case .address(let address)?:
            failuresInARow = 0
            let resolved = tcp.endpoint(address: address)
            if resolved == current {
                lookupWanted = false
                lookup.reset()
                return nil
            }
            do {
                try socket.connect(resolved)
                if let old = current { try? socket.disconnect(old) }
                logger.info(
                    "peer.connecting", metadata: ["endpoint": endpoint, "address": address, "previous": current ?? "none"])
                current = resolved
                lookupWanted = false
                lookup.reset()
                return nil
            } catch {
                // Not expected for an address getaddrinfo gave; looked up again after retryMs.
                logger.error("peer.connect_failed", metadata: ["endpoint": resolved, "error": "\(error)"])
            }
        case .failed(let error)?:
            failuresInARow += 1
            let metadata = ["endpoint": endpoint, "host": tcp.host, "error": error]
            if failuresInARow == 1 {
                logger.warning("peer.lookup_failed", metadata: metadata)
            } else {
                logger.debug("peer.lookup_failed", metadata: metadata)
            }
        case nil:
            break
        }
        if lastAttempt.map({ now >= $0 + retryMs }) ?? true, lookup.startAttempt() {
            lastAttempt = now
        }
        return max(1, (lastAttempt ?? now) + retryMs - now)
    }

    /// Closes the monitor (the socket is its owner's to close).
    package func close() { monitor.close() }
}
