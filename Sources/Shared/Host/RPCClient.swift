import CZMQ
import Foundation
import Synchronization

/// Calls one service, over one or more replicas, with async/await.
///
/// `endpoint` names the service's ROUTER, or a comma-separated list of them, one per replica
/// (`tcp://10.0.0.5:5553,tcp://10.0.0.6:5553`). Each replica gets its own DEALER socket (with
/// `ZMQ_IMMEDIATE`, so a send fails at once unless that connection is up), and requests go to
/// the connected replicas in turn. Why one DEALER per replica rather than one connected to
/// all: a DEALER hides which peer took a message, and failover needs to know which requests
/// were on the connection that dropped.
///
/// Thousands of requests may be in flight at once; each has a deadline, kept in a heap (the
/// socket thread looks only at the earliest, never at every call in flight). The caller can tell
/// "down" from "slow": a request that cannot be sent because no replica is connected, or whose
/// replica disconnects before replying, fails with `service_unavailable` (503); one that gets
/// no reply before its deadline fails with `service_timeout` (504). Failover: a request that no
/// replica took is offered to the next one at once, and retried until a short budget runs out;
/// one that left and lost its replica may have been applied, so it is sent again (to a live
/// replica) only if the message type is idempotent or the caller says the call is (a write
/// carrying an idempotency key). Late replies are dropped, so a lost reply never wedges the
/// socket (DEALER has no REQ lockstep).
public final class RPCClient: Sendable {
    /// The service's name, used in error messages and metrics.
    public let service: String
    /// The endpoint as configured: one ROUTER, or a comma-separated list, one per replica.
    public let endpoint: String
    /// `endpoint` split into the replicas' endpoints.
    public let replicas: [String]
    private let context: ZMQContext
    private let logger: Logger
    private let security: TransportSecurity
    private let wakeup = Wakeup()
    private let state = Locked<ClientState>(ClientState())
    private let connectedCount = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    /// How long a request that could not be sent keeps retrying before `service_unavailable`, in ms.
    public let unsentRetryBudgetMs: Int64
    /// The deadline of a call that names none, relative to the call, in ms.
    public let defaultTimeoutMs: Int

    private struct Pending {
        var continuation: CheckedContinuation<Outcome, Never>
        var deadline: Int64
    }

    private struct ClientState {
        var queue: [(id: String, frames: [[UInt8]], deadline: Int64)] = []
        var pending: [String: Pending] = [:]
    }

    enum Outcome: Sendable {
        /// The reply envelope, parsed once by the socket thread, and the binary frame after it.
        case reply(JSONObject, [UInt8]?)
        case notSent
        case disconnected
        case timedOut
    }

    /// Creates the client and starts its socket thread; the DEALERs connect in the background.
    /// - Parameters:
    ///   - endpoint: the service's ROUTER, e.g. `tcp://127.0.0.1:5551`, or a comma-separated
    ///     list of its replicas' ROUTERs.
    ///   - unsentRetryBudgetMs: see the property.
    ///   - defaultTimeoutMs: see the property (2 s: the gateway's per-request budget).
    /// - Throws: `ZMQError` when the socket cannot be created or the endpoint is invalid.
    public convenience init(
        service: String, endpoint: String, context: ZMQContext, logger: Logger, security: TransportSecurity = .current,
        unsentRetryBudgetMs: Int64 = 300, defaultTimeoutMs: Int = 2_000
    ) throws {
        try self.init(
            service: service, endpoint: endpoint, context: context, logger: logger, security: security,
            unsentRetryBudgetMs: unsentRetryBudgetMs, defaultTimeoutMs: defaultTimeoutMs, resolver: HostLookup.resolve)
    }

    /// The same, with a stand-in for the host-name lookup (tests).
    init(
        service: String, endpoint: String, context: ZMQContext, logger: Logger, security: TransportSecurity = .current,
        unsentRetryBudgetMs: Int64 = 300, defaultTimeoutMs: Int = 2_000,
        resolver: @escaping @Sendable (String) -> HostLookup.Outcome
    ) throws {
        self.service = service
        self.endpoint = endpoint
        self.replicas = Self.split(endpoint)
        self.context = context
        self.logger = logger
        self.security = security
        self.unsentRetryBudgetMs = unsentRetryBudgetMs
        self.defaultTimeoutMs = defaultTimeoutMs
        guard !replicas.isEmpty else {
            throw ZMQError.failed(operation: "RPCClient \(service)", errno: EINVAL, message: "no endpoint in '\(endpoint)'")
        }
        var sockets: [ReplicaSocket] = []
        for replica in replicas {
            let dealer = try ZMQSocket(context, .dealer)
            try SocketDefaults.apply(dealer)
            try dealer.set(ZMQ_IMMEDIATE, 1)  // queue only to completed connections: EAGAIN means "down"
            try dealer.setHighWaterMarks(send: 100_000, receive: 100_000)
            try security.configureClient(dealer, service)
            // Connects to the address of the endpoint's host, looked up off libzmq's I/O thread.
            let connector = try PeerConnector(
                socket: dealer, endpoint: replica, wakeup: wakeup,
                logger: logger.with(["peer": service, "replica": replica]), resolver: resolver)
            sockets.append(ReplicaSocket(dealer: dealer, connector: connector))
        }
        let box = ClientSockets(sockets)
        let thread = Thread { [self] in self.loop(box.take()) }
        thread.name = "rpc.\(service)"
        thread.start()
    }

    /// The endpoints in a comma-separated list, trimmed, empty entries dropped.
    public static func split(_ endpoints: String) -> [String] {
        endpoints.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// Whether a connection to some replica of the service is up (handshake done, not
    /// disconnected).
    public var isConnected: Bool { connectedCount.load(ordering: .acquiring) > 0 }

    /// How many replicas have a connection up.
    public var connectedReplicas: Int { connectedCount.load(ordering: .acquiring) }

    /// Stops the socket thread; calls in flight fail with `service_unavailable`.
    public func shutdown() {
        stopped.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// Sends one request and waits for its reply.
    /// - Parameters:
    ///   - timeoutMs: the deadline, relative to now, in ms (carried in the envelope); nil for
    ///     `defaultTimeoutMs`.
    ///   - trace: the trace id to carry (a new one when nil).
    /// - Returns: the reply body.
    /// - Throws: `ServiceError`: the service's own error, or `service_unavailable` (503),
    ///   `service_timeout` (504), `internal_error` for a reply that does not decode.
    public func call<R: RPC>(
        _ rpc: R.Type, _ request: R.Request, timeoutMs: Int? = nil, trace: String? = nil, idempotent: Bool? = nil
    ) async throws -> R.Reply {
        try await call(rpc, request, binary: nil, timeoutMs: timeoutMs, trace: trace, idempotent: idempotent).reply
    }

    /// Sends one request with raw bytes in a binary frame after its envelope (nil: none, the
    /// same message `call(_:_:timeoutMs:trace:)` sends) and waits for its reply.
    /// - Parameter idempotent: whether a request whose replica disconnected before replying may
    ///   be sent again (nil: `R.isIdempotent`; true for a write that carries an idempotency key,
    ///   which the service answers once).
    /// - Returns: the reply body, and the binary frame the service sent after the reply's
    ///   envelope (nil when it sent none).
    /// - Throws: as `call(_:_:timeoutMs:trace:)`.
    public func call<R: RPC>(
        _ rpc: R.Type, _ request: R.Request, binary: [UInt8]?, timeoutMs: Int? = nil, trace: String? = nil,
        idempotent: Bool? = nil
    ) async throws -> (reply: R.Reply, binary: [UInt8]?) {
        let start = Timestamp.nowMs()
        let deadline = start + Int64(timeoutMs ?? defaultTimeoutMs)
        let trace = trace ?? RandomID.unique()
        var backoffMs: Int64 = 10
        while true {
            let id = RandomID.unique()
            let envelope = RequestEnvelope(id: id, type: R.type, deadline: deadline, trace: trace, body: request)
            let bytes: [UInt8]
            do { bytes = try WireJSON.encode(envelope) } catch {
                throw ServiceError.internal("cannot encode \(R.type): \(error)")
            }
            let outcome = await send(id: id, frames: binary.map { [[], bytes, $0] } ?? [[], bytes], deadline: deadline)
            let now = Timestamp.nowMs()
            switch outcome {
            case .reply(let data, let replyBinary):
                let reply: ReplyEnvelope<R.Reply>
                do { reply = try WireJSON.decode(ReplyEnvelope<R.Reply>.self, from: .object(data)) } catch {
                    if let header = try? WireJSON.decode(ReplyHeader.self, from: .object(data)), let error = header.error {
                        throw error.receivedFromPeer()
                    }
                    throw ServiceError.internal("cannot decode reply to \(R.type): \(error)")
                }
                if let error = reply.error { throw error.receivedFromPeer() }
                guard let body = reply.body else { throw ServiceError.internal("reply to \(R.type) has no body") }
                return (body, replyBinary)
            case .timedOut:
                throw ServiceError.timeout(service)
            case .notSent:
                guard now + backoffMs < min(deadline, start + unsentRetryBudgetMs) else {
                    throw ServiceError.unavailable(service)
                }
            case .disconnected:
                guard idempotent ?? R.isIdempotent, now + backoffMs < deadline else {
                    throw ServiceError.unavailable(service)
                }
                // Another replica may be up: try at once (the dropped one is no longer offered).
                if connectedCount.load(ordering: .acquiring) > 0 { continue }
            }
            try? await Task.sleep(for: .milliseconds(backoffMs))
            backoffMs = min(backoffMs * 2, 200)
        }
    }

    private func send(id: String, frames: [[UInt8]], deadline: Int64) async -> Outcome {
        if stopped.load(ordering: .acquiring) { return .notSent }
        return await withCheckedContinuation { continuation in
            state.withLock {
                $0.pending[id] = Pending(continuation: continuation, deadline: deadline)
                $0.queue.append((id, frames, deadline))
            }
            wakeup.signal()
        }
    }

    private func resolve(_ id: String, _ outcome: Outcome) {
        let pending = state.withLock { $0.pending.removeValue(forKey: id) }
        pending?.continuation.resume(returning: outcome)
    }

    // MARK: Socket thread

    private func loop(_ replicas: [ReplicaSocket]) {
        var items: [PollItem] = []
        for replica in replicas { items += [.socket(replica.dealer), .socket(replica.connector.monitor)] }
        let poller = Poller(items + [.fd(wakeup.fd)])
        let wakeupIndex = items.count
        // Requests sent and not yet answered, by replica: a replica's disconnect fails its own.
        var sent = Array(repeating: Set<String>(), count: replicas.count)
        var connected = Array(repeating: false, count: replicas.count)
        var next = 0  // round robin over the replicas
        // The deadlines of the calls taken from the queue, earliest first.
        var deadlines = DeadlineHeap<String>()
        do {
            while !stopped.load(ordering: .acquiring) {
                let now = Timestamp.nowMs()
                // Deadlines: only the heap's earliest entries are looked at; those whose call
                // was settled another way (answered, not sent) are dropped as they come up.
                let (expired, nearest) = state.withLock { s -> ([String], Int64?) in
                    var expired: [String] = []
                    while let (deadline, id) = deadlines.earliest {
                        if s.pending[id] == nil {
                            deadlines.removeEarliest()
                        } else if deadline <= now {
                            expired.append(id)
                            deadlines.removeEarliest()
                        } else {
                            return (expired, deadline)
                        }
                    }
                    return (expired, nil)
                }
                for id in expired {
                    for i in sent.indices { sent[i].remove(id) }
                    resolve(id, .timedOut)
                }
                var lookupDue: Int64? = nil
                for replica in replicas {
                    if let due = replica.connector.service(nowMs: now) { lookupDue = min(lookupDue ?? due, due) }
                }
                let timeout = Int(max(1, min(nearest.map { $0 - now } ?? 1_000, lookupDue ?? 1_000, 1_000)))
                let ready = try poller.poll(timeoutMs: timeout)
                if ready[wakeupIndex] { wakeup.drain() }
                // Connection changes first, so a request is not offered to a replica just lost.
                for (i, replica) in replicas.enumerated() where ready[2 * i + 1] {
                    for code in try replica.connector.receiveEvents() {
                        if code == ZMQ_EVENT_HANDSHAKE_SUCCEEDED {
                            if !connected[i] { connectedCount.add(1, ordering: .releasing) }
                            connected[i] = true
                        } else if code == ZMQ_EVENT_DISCONNECTED {
                            if connected[i] { connectedCount.subtract(1, ordering: .releasing) }
                            connected[i] = false
                            // Requests already sent on that connection will never be answered.
                            for id in sent[i] { resolve(id, .disconnected) }
                            sent[i].removeAll()
                        }
                    }
                }
                let queue = state.withLock { s -> [(id: String, frames: [[UInt8]], deadline: Int64)] in
                    defer { s.queue.removeAll() }
                    return s.queue
                }
                for item in queue {
                    deadlines.insert(item.id, deadline: item.deadline)
                    // The next replica that takes it (ZMQ_IMMEDIATE: only a connected one does).
                    var taken = false
                    for step in 0..<replicas.count {
                        let i = (next + step) % replicas.count
                        if try replicas[i].dealer.send(item.frames, dontWait: true) {
                            sent[i].insert(item.id)
                            next = (i + 1) % replicas.count
                            taken = true
                            break
                        }
                    }
                    if !taken { resolve(item.id, .notSent) }
                }
                for (i, replica) in replicas.enumerated() where ready[2 * i] {
                    while let frames = try replica.dealer.receive(dontWait: true) {
                        // [empty delimiter, envelope, binary?]
                        let withBinary = frames.count == 3 && frames[0].isEmpty
                        guard let payload = withBinary ? frames[1] : frames.last,
                            case .object(let reply)? = try? JSONParser.parse(payload),
                            case .string(let id)? = reply["id"]
                        else { continue }
                        if sent[i].remove(id) != nil { resolve(id, .reply(reply, withBinary ? frames[2] : nil)) }
                    }
                }
            }
        } catch ZMQError.contextTerminated {
        } catch {
            logger.error("rpc.loop_failed", metadata: ["service": service, "error": "\(error)"])
        }
        stopped.store(true, ordering: .releasing)
        let remaining = state.withLock { s -> [String] in Array(s.pending.keys) }
        for id in remaining { resolve(id, .disconnected) }
        for replica in replicas {
            replica.dealer.close()
            replica.connector.close()
        }
    }
}

/// One replica's DEALER and the connector that keeps it connected.
private struct ReplicaSocket {
    let dealer: ZMQSocket
    let connector: PeerConnector
}

/// Moves the client's sockets to their thread.
private final class ClientSockets: @unchecked Sendable {
    // @unchecked: written before the thread starts, taken once by it, never shared.
    private var sockets: [ReplicaSocket]?
    init(_ sockets: [ReplicaSocket]) { self.sockets = sockets }
    func take() -> [ReplicaSocket] {
        defer { sockets = nil }
        return sockets!
    }
}
