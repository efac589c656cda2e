import CZMQ
import Foundation
import Messages
import Support
import Synchronization
import Transport
import Wire

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
    /// Signals the socket side: the client's own thread, or the loop that drives it.
    private let wakeup: Wakeup
    /// The loop whose thread drives the sockets (nil: the client's own thread).
    private let driver: LoopExecutor?
    /// Set when a call is queued, cleared when the socket side takes the queue.
    private let queued = Atomic<Bool>(false)
    /// A driven client's pump, until its loop takes it.
    private let pumpForLoop: PumpBox?
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

    /// Creates the client with its sockets driven by a loop's thread instead of a thread of its
    /// own: the loop takes the pump (`takePump()`) and turns it (see `RPCPump`), and a call made
    /// on that thread (a task on `executor`) is sent in the loop's turn and resumed there, with
    /// no thread handoff on either side. Calls from other threads signal `wakeup`, the loop's.
    /// Parameters and errors as for `init(service:endpoint:context:logger:security:unsentRetryBudgetMs:defaultTimeoutMs:)`.
    public convenience init(
        service: String, endpoint: String, context: ZMQContext, logger: Logger, security: TransportSecurity = .current,
        unsentRetryBudgetMs: Int64 = 300, defaultTimeoutMs: Int = 2_000, drivenBy executor: LoopExecutor,
        wakeup: Wakeup
    ) throws {
        try self.init(
            service: service, endpoint: endpoint, context: context, logger: logger, security: security,
            unsentRetryBudgetMs: unsentRetryBudgetMs, defaultTimeoutMs: defaultTimeoutMs, resolver: HostLookup.resolve,
            driver: (executor, wakeup))
    }

    /// The same, with a stand-in for the host-name lookup (tests) and, optionally, a driving loop.
    init(
        service: String, endpoint: String, context: ZMQContext, logger: Logger, security: TransportSecurity = .current,
        unsentRetryBudgetMs: Int64 = 300, defaultTimeoutMs: Int = 2_000,
        resolver: @escaping @Sendable (String) -> HostLookup.Outcome,
        driver: (executor: LoopExecutor, wakeup: Wakeup)? = nil
    ) throws {
        let wakeup = driver?.wakeup ?? Wakeup()
        self.wakeup = wakeup
        self.driver = driver?.executor
        let box = driver == nil ? nil : PumpBox()
        self.pumpForLoop = box
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
        let pump = RPCPump(client: self, replicas: sockets, wakeup: wakeup, pollsWakeup: box == nil)
        if let box {
            box.put(pump)
        } else {
            let owned = PumpBox()
            owned.put(pump)
            let thread = Thread { [self] in self.loop(owned.take()!) }
            thread.name = "rpc.\(service)"
            thread.start()
        }
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
            do { bytes = try envelope.encoded() } catch {
                throw ServiceError.internal("cannot encode \(R.type): \(error)")
            }
            let outcome = await send(id: id, frames: binary.map { [[], bytes, $0] } ?? [[], bytes], deadline: deadline)
            let now = Timestamp.nowMs()
            switch outcome {
            case .reply(let data, let replyBinary):
                // The envelope's `error` and `body` members are decoded directly (a `null` is
                // absent, as for the Codable envelope); the envelope's own keyed container cost
                // as much as a small body.
                if let error = data["error"], error != .null {
                    guard let error = try? WireJSON.decode(ServiceError.self, from: error) else {
                        throw ServiceError.internal("cannot decode the error replying to \(R.type)")
                    }
                    throw error.receivedFromPeer()
                }
                guard let value = data["body"], value != .null else {
                    throw ServiceError.internal("reply to \(R.type) has no body")
                }
                let body: R.Reply
                do { body = try WireJSON.decode(R.Reply.self, from: value) } catch {
                    throw ServiceError.internal("cannot decode reply to \(R.type): \(error)")
                }
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
            // Checked again under the lock `failRemaining` stops under: a call either is failed
            // there or is refused here, never left waiting.
            let accepted = state.withLock { s -> Bool in
                if stopped.load(ordering: .acquiring) { return false }
                s.pending[id] = Pending(continuation: continuation, deadline: deadline)
                s.queue.append((id, frames, deadline))
                return true
            }
            guard accepted else {
                continuation.resume(returning: .notSent)
                return
            }
            queued.store(true, ordering: .releasing)
            // On the driving loop's thread, the loop turns the pump once this job is done.
            if driver?.isLoopThread != true { wakeup.signal() }
        }
    }

    private func resolve(_ id: String, _ outcome: Outcome) {
        let pending = state.withLock { $0.pending.removeValue(forKey: id) }
        pending?.continuation.resume(returning: outcome)
    }

    // MARK: Socket thread

    private func loop(_ pump: RPCPump) {
        do {
            while !stopped.load(ordering: .acquiring) { try pump.turn(waiting: true) }
        } catch ZMQError.contextTerminated {
        } catch {
            logger.error("rpc.loop_failed", metadata: ["service": service, "error": "\(error)"])
        }
        pump.close()
    }

    /// The pump of a client driven by a loop (`init(…drivenBy:)`): taken once, by the loop's
    /// thread, which then runs it (see `RPCPump`); nil for a client on its own thread, or when
    /// taken already.
    public func takePump() -> RPCPump? {
        pumpForLoop?.take()
    }

    /// Takes what the callers queued since the last turn (the socket side, `RPCPump`).
    fileprivate func takeQueue() -> [(id: String, frames: [[UInt8]], deadline: Int64)] {
        queued.store(false, ordering: .releasing)
        return state.withLock { s in
            var taken: [(id: String, frames: [[UInt8]], deadline: Int64)] = []
            swap(&taken, &s.queue)
            return taken
        }
    }

    /// Whether calls wait to be sent: a driving loop turns the pump then.
    fileprivate var hasQueued: Bool { queued.load(ordering: .acquiring) }

    /// The calls among `deadlines`' earliest that passed `now` (removed from it, with the entries
    /// of calls settled another way), and the next live deadline.
    fileprivate func expire(_ deadlines: inout DeadlineHeap<String>, now: Int64) -> (expired: [String], next: Int64?) {
        state.withLock { s -> ([String], Int64?) in
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
    }

    /// Fails every call still waiting (the socket side has stopped).
    fileprivate func failRemaining() {
        let remaining = state.withLock { s -> [String] in
            stopped.store(true, ordering: .releasing)
            return Array(s.pending.keys)
        }
        for id in remaining { resolve(id, .disconnected) }
    }

    fileprivate func noteConnected(_ up: Bool) {
        if up { connectedCount.add(1, ordering: .releasing) } else { connectedCount.subtract(1, ordering: .releasing) }
    }

    fileprivate func settle(_ id: String, _ outcome: Outcome) { resolve(id, outcome) }
}

/// The socket side of one `RPCClient`: its DEALERs, their connectors, which calls each replica
/// took, and the deadlines. It runs on one thread: the client's own (`turn(waiting: true)` in a
/// loop), or the thread of a loop that drives it (`turn(waiting: false)` whenever one of
/// `fileDescriptors` is readable, `wantsTurn` is true or `dueMs` has come), so that a call made
/// on that loop's thread is sent and answered there, with no handoff to a client thread.
public final class RPCPump {
    private unowned let client: RPCClient
    private let replicas: [ReplicaSocket]
    private let poller: Poller
    private let wakeupIndex: Int?
    private let wakeup: Wakeup
    /// Requests sent and not yet answered, by replica: a replica's disconnect fails its own.
    private var sent: [Set<String>]
    private var connected: [Bool]
    private var next = 0  // round robin over the replicas
    /// The deadlines of the calls taken from the queue, earliest first.
    private var deadlines = DeadlineHeap<String>()
    /// When the pump must turn next even if nothing arrives (Unix ms): the next deadline or
    /// host-name lookup; nil when none is waited for.
    public private(set) var dueMs: Int64?
    private var closed = false
    /// Whether a driven turn reads the monitors: only this pump reads them, always until they
    /// have nothing, so their descriptors fire for every new event, and a turn without one
    /// spares the read (a `poll` inside libzmq for each monitor, each turn).
    private var monitorsDue = true

    fileprivate init(client: RPCClient, replicas: [ReplicaSocket], wakeup: Wakeup, pollsWakeup: Bool) {
        self.client = client
        self.replicas = replicas
        self.wakeup = wakeup
        var items: [PollItem] = []
        for replica in replicas { items += [.socket(replica.dealer), .socket(replica.connector.monitor)] }
        wakeupIndex = pollsWakeup ? items.count : nil
        poller = Poller(items + (pollsWakeup ? [.fd(wakeup.fd)] : []))
        sent = Array(repeating: [], count: replicas.count)
        connected = Array(repeating: false, count: replicas.count)
    }

    /// The descriptors a driving loop waits on: `ZMQ_FD` of each DEALER, and of each monitor
    /// socket (when one of those fires, the loop calls `monitorsSignalled()` before the turn).
    /// - Throws: `ZMQError` when one cannot be read.
    public func fileDescriptors() throws -> (dealers: [Int32], monitors: [Int32]) {
        (
            try replicas.map { try $0.dealer.fileDescriptor() },
            try replicas.map { try $0.connector.monitor.fileDescriptor() }
        )
    }

    /// A monitor socket's descriptor fired: the next driven turn reads the monitors.
    public func monitorsSignalled() { monitorsDue = true }

    /// Whether calls wait to be sent.
    public var wantsTurn: Bool { client.hasQueued }

    /// One turn: expires deadlines, takes connection changes, sends what the callers queued and
    /// reads every reply waiting. With `waiting`, first waits (up to the next deadline or lookup,
    /// at most 1 s) for something to do.
    /// - Throws: `ZMQError` (`.contextTerminated` when the context shut down).
    public func turn(waiting: Bool) throws {
        let now = Timestamp.nowMs()
        let (expired, nearest) = client.expire(&deadlines, now: now)
        for id in expired {
            for i in sent.indices { sent[i].remove(id) }
            client.settle(id, .timedOut)
        }
        var lookupDue: Int64? = nil
        for replica in replicas {
            if let due = replica.connector.service(nowMs: now) { lookupDue = min(lookupDue ?? due, due) }
        }
        let waitMs = Int(max(1, min(nearest.map { $0 - now } ?? 1_000, lookupDue ?? 1_000, 1_000)))
        dueMs = [nearest, lookupDue.map { now + $0 }].compactMap { $0 }.min()
        // A driven pump does not poll: it reads every socket below anyway, and `zmq_poll` cost
        // three system calls a turn (its own `poll` and one per socket's `ZMQ_EVENTS`), about a
        // dozen per profile header in the gateway (`strace -c`).
        let ready = waiting ? try poller.poll(timeoutMs: waitMs) : []
        if let wakeupIndex, waiting, ready[wakeupIndex] { wakeup.drain() }
        // Connection changes first, so a request is not offered to a replica just lost. A
        // driven pump reads every monitor when one of their descriptors fired (they only say
        // "look", so which one is not told).
        let readMonitors = monitorsDue
        monitorsDue = false
        for (i, replica) in replicas.enumerated() where waiting ? ready[2 * i + 1] : readMonitors {
            for code in try replica.connector.receiveEvents() {
                if code == ZMQ_EVENT_HANDSHAKE_SUCCEEDED {
                    if !connected[i] { client.noteConnected(true) }
                    connected[i] = true
                } else if code == ZMQ_EVENT_DISCONNECTED {
                    if connected[i] { client.noteConnected(false) }
                    connected[i] = false
                    // Requests already sent on that connection will never be answered.
                    for id in sent[i] { client.settle(id, .disconnected) }
                    sent[i].removeAll()
                }
            }
        }
        for item in client.takeQueue() {
            deadlines.insert(item.id, deadline: item.deadline)
            if dueMs.map({ item.deadline < $0 }) ?? true { dueMs = item.deadline }
            // The next replica that takes it (ZMQ_IMMEDIATE: only a connected one does).
            var taken = false
            for step in 0..<replicas.count {
                let i = (next + step) % replicas.count
                // A refused send asks `ZMQ_EVENTS` and tries once more: `zmq_send` processes the
                // socket's commands (a connection just attached) at most once a millisecond,
                // and without a poll before it nothing else has processed them this turn.
                let dealer = replicas[i].dealer
                if try dealer.send(item.frames, dontWait: true)
                    || (try dealer.events() & ZMQ_POLLOUT != 0 && dealer.send(item.frames, dontWait: true))
                {
                    sent[i].insert(item.id)
                    next = (i + 1) % replicas.count
                    taken = true
                    break
                }
            }
            if !taken { client.settle(item.id, .notSent) }
        }
        // A driven pump reads every DEALER: a send may have taken the signal of a reply that
        // arrived meanwhile, and its descriptor would not fire for it again.
        for (i, replica) in replicas.enumerated() where !waiting || ready[2 * i] {
            while let frames = try replica.dealer.receive(dontWait: true) {
                // [empty delimiter, envelope, binary?]
                let withBinary = frames.count == 3 && frames[0].isEmpty
                guard let payload = withBinary ? frames[1] : frames.last,
                    case .object(let reply)? = try? JSONParser.parse(payload),
                    case .string(let id)? = reply["id"]
                else { continue }
                if sent[i].remove(id) != nil { client.settle(id, .reply(reply, withBinary ? frames[2] : nil)) }
            }
        }
    }

    /// Fails the calls still waiting and closes the sockets; idempotent.
    public func close() {
        guard !closed else { return }
        closed = true
        client.failRemaining()
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

/// Hands a client's pump to the thread that runs it.
final class PumpBox: @unchecked Sendable {
    // @unchecked: written once before the pump runs, taken once by the thread that runs it.
    private let lock = NSLock()
    private var pump: RPCPump?
    func put(_ pump: RPCPump) { lock.withLock { self.pump = pump } }
    func take() -> RPCPump? {
        lock.withLock {
            defer { pump = nil }
            return pump
        }
    }
}
