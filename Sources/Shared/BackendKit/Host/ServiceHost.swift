import CZMQ
import Foundation
import Messages
import ServiceKit
import Storage
import Support
import Synchronization
import Transport
import Wire

/// Hosts one service on ZeroMQ: a ROUTER for requests and a PUB for events.
///
/// Requests are dispatched by envelope `type` to async handlers, many at once (a slow handler
/// never delays a fast one). Malformed frames, bad JSON, unknown types and expired deadlines get
/// an error reply, never a crash and never silence. `ops.ping` and (with a database)
/// `ops.replay` are answered by the host. Events committed through the database's outbox are
/// published in sequence order, and a heartbeat on topic `_hb` carries the newest sequence
/// number every second so subscribers notice lost tail events.
///
/// Both sockets live on one thread, which also runs the handlers (`LoopExecutor`): a handler
/// starts in the turn its request arrived in and its reply is sent in the turn it finishes in.
/// Blocking work goes to the database's queues (or the service's own), never to this thread.
///
/// A request is `[routing id..., empty delimiter, envelope]`, optionally followed by one binary
/// frame (raw bytes, e.g. an upload) that reaches handlers registered with `onBinary`; a reply
/// is the envelope, optionally followed by one binary frame the same way. Messages without one
/// are unchanged on the wire.
public final class ServiceHost: Service {
    /// Answers one request: its envelope's `body`, parsed once by the socket thread, and the
    /// binary frame that followed the envelope, if any. Returns the reply's frames (the envelope,
    /// then at most one binary frame).
    public typealias Handler =
        @Sendable (_ body: JSONValue, _ binary: [UInt8]?, _ context: RequestContext) async -> [[UInt8]]

    public let name: String
    private let context: ZMQContext
    private let rpcBind: String
    private let eventsBind: String
    private let database: Database?
    private let logger: Logger
    private let security: TransportSecurity
    private let handlers = Locked<[String: Handler]>([:])
    private let outgoing = Locked<(replies: [[[UInt8]]], events: [OutboxEvent])>(([], []))
    private let wakeup = Wakeup()
    /// Runs the handlers on the socket thread (see `LoopExecutor`).
    private let executor: LoopExecutor
    private let stopRequested = Atomic<Bool>(false)
    private let finished = Locked<CheckedContinuation<Void, Never>?>(nil)
    private let done = Atomic<Bool>(false)
    private let completedIDs = Locked<[String]>([])
    private let counters = Locked<[String: Int64]>([:])
    private let counterSources = Locked<[@Sendable () -> [String: Int64]]>([])
    private let startedMs = Timestamp.nowMs()
    /// The endpoints actually bound, once `start()` returned.
    public let boundEndpoints = Locked<(rpc: String, events: String)>(("", ""))
    /// Whether this host publishes events and heartbeats now, and the head its heartbeat starts
    /// from (set by `startPublishing`; nil: keep the loop's own).
    private let publishing: Locked<(on: Bool, head: Int64?)>

    /// - Parameters:
    ///   - rpcBind: ROUTER endpoint, e.g. `tcp://127.0.0.1:5551` (`:*` for an ephemeral port).
    ///   - eventsBind: PUB endpoint.
    ///   - database: the service database whose outbox feeds the PUB socket (nil: no events).
    ///   - relayed: false: the host publishes what this process commits, as it commits (one
    ///     process per database, SQLite); true: it publishes only what `publish(_:)` hands it,
    ///     between `startPublishing(head:)` and `stopPublishing()` (replicas: see `OutboxRelay`).
    public init(
        name: String, context: ZMQContext, rpcBind: String, eventsBind: String, database: Database?, logger: Logger,
        security: TransportSecurity = .current, relayed: Bool = false
    ) {
        self.name = name
        self.context = context
        self.rpcBind = rpcBind
        self.eventsBind = eventsBind
        self.database = database
        self.logger = logger
        self.security = security
        self.publishing = Locked((!relayed, nil))
        self.executor = LoopExecutor(wakeup: wakeup)
        if let database {
            if !relayed { database.setPublisher { [self] events in publish(events) } }
            on(Ops.Replay.self) { request, _ in
                let limit = min(max(request.limit, 0), 1_000)
                let (head, events) = try await database.outbox(
                    after: request.after, limit: limit, maxBytes: Ops.Replay.maxBytes)
                return Ops.Replay.Reply(head: head, events: events.map { String(decoding: $0.envelope, as: UTF8.self) })
            }
        }
    }

    /// Publishes committed outbox events, in sequence order, on the PUB socket.
    public func publish(_ events: [OutboxEvent]) {
        outgoing.withLock { $0.events.append(contentsOf: events) }
        wakeup.signal()
    }

    /// Starts publishing (a relayed host): the heartbeat announces `head` at once and every
    /// second, and rises with what `publish(_:)` hands over.
    public func startPublishing(head: Int64) {
        publishing.withLock { $0 = (true, head) }
        wakeup.signal()
    }

    /// Stops publishing events and heartbeats (a relayed host whose replica stood down).
    public func stopPublishing() {
        publishing.withLock { $0 = (false, nil) }
        outgoing.withLock { $0.events.removeAll() }
    }

    /// Registers the handler for one message type. A handler throwing `ServiceError` answers
    /// with that error; any other error answers `internal_error` (and is logged).
    public func on<R: RPC>(_ rpc: R.Type, _ handler: @escaping @Sendable (R.Request, RequestContext) async throws -> R.Reply) {
        onBinary(rpc) { request, _, context in (try await handler(request, context), nil) }
    }

    /// Registers the handler for one message type that carries raw bytes: it gets the binary
    /// frame that followed the request's envelope (nil when there was none) and may return one
    /// to send after the reply's envelope (nil: none). Errors as for `on`; an error reply never
    /// carries a binary frame.
    public func onBinary<R: RPC>(
        _ rpc: R.Type,
        _ handler: @escaping @Sendable (R.Request, [UInt8]?, RequestContext) async throws -> (R.Reply, [UInt8]?)
    ) {
        let wrapped: Handler = { body, binary, context in
            let reply: ReplyEnvelope<R.Reply>
            var replyBinary: [UInt8]? = nil
            do {
                let request = try WireJSON.decode(R.Request.self, from: body)
                do {
                    let (answer, bytes) = try await RequestDeadline.$current.withValue(context.deadline) {
                        try await handler(request, binary, context)
                    }
                    replyBinary = bytes
                    reply = ReplyEnvelope(id: context.correlationId, type: context.type, body: answer, error: nil)
                } catch let error as ServiceError {
                    reply = ReplyEnvelope(id: context.correlationId, type: context.type, body: nil, error: error)
                } catch let error as WriteDeadlinePassed {
                    // The caller gave up, as for any deadline: answered, not logged.
                    reply = ReplyEnvelope(
                        id: context.correlationId, type: context.type, body: nil, error: error.serviceError)
                } catch let error as any ServiceErrorConvertible where error.serviceError != nil {
                    context.logger.warning("request.failed", metadata: ["error": "\(error)"])
                    reply = ReplyEnvelope(
                        id: context.correlationId, type: context.type, body: nil, error: error.serviceError)
                } catch {
                    context.logger.error("request.failed", metadata: ["error": "\(error)"])
                    reply = ReplyEnvelope(
                        id: context.correlationId, type: context.type, body: nil, error: .internal("internal error"))
                }
            } catch {
                reply = ReplyEnvelope(
                    id: context.correlationId, type: context.type, body: nil,
                    error: .badRequest(.malformedBody, "body does not match \(context.type): \(error)"))
            }
            let envelope = (try? reply.encoded()) ?? []
            return replyBinary.map { [envelope, $0] } ?? [envelope]
        }
        handlers.withLock { $0[R.type] = wrapped }
    }

    /// Whether the caller runs on the host's socket thread, where handlers run.
    public var isSocketThread: Bool { executor.isLoopThread }

    /// Binds both sockets and starts the socket thread.
    /// - Returns: the endpoints actually bound (ephemeral ports resolved).
    /// - Throws: `ZMQError` when a bind fails (e.g. address in use).
    @discardableResult
    public func start() throws -> (rpc: String, events: String) {
        let router = try ZMQSocket(context, .router)
        try SocketDefaults.apply(router)
        try router.setHighWaterMarks(send: 100_000, receive: 100_000)
        try security.configureServer(router)
        let rpc = try router.bind(rpcBind)
        let pub = try ZMQSocket(context, .pub)
        try SocketDefaults.applyStreaming(pub)
        try pub.setHighWaterMarks(send: 200_000, receive: 1_000)
        try security.configureServer(pub)
        let events = try pub.bind(eventsBind)
        boundEndpoints.withLock { $0 = (rpc, events) }
        let box = SocketBox(router: router, pub: pub)
        let thread = Thread { [self] in
            self.loop(box.take())
        }
        thread.name = "\(name).host"
        thread.start()
        logger.info("host.started", metadata: ["rpc": rpc, "events": events])
        return (rpc, events)
    }

    /// Stops gracefully (see `stop()`).
    public func shutdownGracefully() { stop() }

    /// Runs until the task is cancelled or `stop()` is called, then stops (see `stop()`) and
    /// returns once the sockets are closed.
    public func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let alreadyDone = finished.withLock { slot -> Bool in
                    if done.load(ordering: .acquiring) { return true }
                    slot = c
                    return false
                }
                if alreadyDone { c.resume() }
            }
        } onCancel: {
            self.stop()
        }
    }

    /// Asks the socket thread to stop: requests still in flight after 700 ms are answered with
    /// `shutting_down` (503), then the sockets close. Returns at once; `run()` returns when done.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// Counter snapshot: requests by type, errors, events published, the database's commits
    /// and writes, and whatever sources were added with `addCounters`.
    public func counterSnapshot() -> [String: Int64] {
        var snapshot = counters.withLock { $0 }
        if let database { snapshot.merge(database.counters()) { $1 } }
        for source in counterSources.withLock({ $0 }) { snapshot.merge(source()) { $1 } }
        return snapshot
    }

    /// Adds counters to the snapshot that `ops.ping` reports (e.g. an `EventSubscriber`'s).
    public func addCounters(_ source: @escaping @Sendable () -> [String: Int64]) {
        counterSources.withLock { $0.append(source) }
    }

    private func count(_ key: String, _ n: Int64 = 1) { counters.withLock { $0[key, default: 0] += n } }

    // MARK: Socket thread

    private func loop(_ sockets: (router: ZMQSocket, pub: ZMQSocket)) {
        executor.bind()
        let (router, pub) = sockets
        var inflight: [String: [[UInt8]]] = [:]  // correlation id → routing frames
        var head: Int64 = database?.currentHead() ?? 0
        var nextHeartbeat = Timestamp.nowMs()
        var stopDeadline: Int64? = nil
        do {
            var waiter = try SocketWait(router, wakeup.fd)
            while true {
                let now = Timestamp.nowMs()
                let (publishes, announced) = publishing.withLock { p -> (Bool, Int64?) in
                    defer { p.head = nil }
                    return (p.on, p.head)
                }
                if let announced {
                    head = announced
                    nextHeartbeat = now  // announce the head at once
                }
                if now >= nextHeartbeat {
                    if publishes {
                        let hb = "{\"producer\":\"\(name)\",\"seq\":\(head)}"
                        _ = try pub.send([Array("_hb".utf8), Array(hb.utf8)], dontWait: true)
                    }
                    nextHeartbeat = now + 1_000
                }
                if stopRequested.load(ordering: .acquiring) && stopDeadline == nil {
                    stopDeadline = now + 700
                    logger.info("host.stopping", metadata: ["inflight": "\(inflight.count)"])
                }
                for id in completedIDs.withLock({ c -> [String] in
                    defer { c.removeAll() }
                    return c
                }) {
                    inflight[id] = nil
                }
                if let deadline = stopDeadline, inflight.isEmpty || now >= deadline { break }
                let timeout =
                    executor.hasPending ? 0 : stopDeadline.map { max(0, min($0 - now, 50)) } ?? max(0, nextHeartbeat - now)
                let ready = try waiter.wait(timeoutMs: Int(timeout))
                if ready.fd { wakeup.drain() }
                if ready.socket {
                    while let frames = try router.receive(dontWait: true) {
                        handleIncoming(frames, router: router, stopping: stopDeadline != nil, inflight: &inflight)
                    }
                    waiter.readDry()
                }
                // The handlers started above, and those whose awaits resumed, run now: their
                // replies are taken below, in this same turn.
                executor.runPending()
                let (replies, events) = outgoing.withLock { o -> ([[[UInt8]]], [OutboxEvent]) in
                    defer { o = ([], []) }
                    return (o.replies, o.events)
                }
                for reply in replies {
                    _ = try router.send(reply, dontWait: true)
                }
                if !replies.isEmpty { waiter.used() }
                // Read again after the take: the relay may have started publishing since the top
                // of this turn and handed over its first events.
                let publishesNow = !events.isEmpty && publishing.withLock { $0.on }
                for event in events where publishesNow {
                    if try pub.send([Array(event.type.utf8), event.envelope], dontWait: true) {
                        count("events.published")
                    } else {
                        count("events.dropped")
                    }
                    head = max(head, event.seq)
                }
            }
        } catch ZMQError.contextTerminated {
            // the process is shutting down
        } catch {
            logger.error("host.loop_failed", metadata: ["error": "\(error)"])
        }
        // Fail whatever is still in flight, so no caller is left waiting for its deadline.
        for (id, routing) in inflight {
            let reply = ReplyEnvelope<Empty>(
                id: id, type: "", body: nil,
                error: ServiceError(.shuttingDown, message: "\(name) is shutting down", status: 503))
            if let bytes = try? reply.encoded() { _ = try? router.send(routing + [bytes], dontWait: true) }
        }
        router.close()
        pub.close()
        executor.stop()
        logger.info("host.stopped")
        let c = finished.withLock { slot -> CheckedContinuation<Void, Never>? in
            done.store(true, ordering: .releasing)
            defer { slot = nil }
            return slot
        }
        c?.resume()
    }

    private func handleIncoming(
        _ frames: [[UInt8]], router: ZMQSocket, stopping: Bool, inflight: inout [String: [[UInt8]]]
    ) {
        // [routing id..., empty delimiter, envelope, binary?]; a DEALER may omit the delimiter
        // (then there is no binary frame). Routing ids are never empty, so the first empty frame
        // is the delimiter.
        guard frames.count >= 2 else { return }  // nothing to route a reply to
        let routing: [[UInt8]]
        let payload: [UInt8]
        var binary: [UInt8]? = nil
        let delimiter = frames.firstIndex(where: { $0.isEmpty })
        if let delimiter, delimiter > 0, delimiter == frames.count - 2 {
            routing = Array(frames[...delimiter])
            payload = frames[delimiter + 1]
        } else if let delimiter, delimiter > 0, delimiter == frames.count - 3 {
            routing = Array(frames[...delimiter])
            payload = frames[delimiter + 1]
            binary = frames[delimiter + 2]
        } else {
            routing = Array(frames.dropLast())
            payload = frames.last!
        }
        func reply(_ id: String, _ type: String, _ error: ServiceError) {
            count("requests.rejected")
            let envelope = ReplyEnvelope<Empty>(id: id, type: type, body: nil, error: error)
            if let bytes = try? envelope.encoded() { _ = try? router.send(routing + [bytes], dontWait: true) }
        }
        // Parsed once, here: the header routes the request, the body goes to its handler.
        guard case .object(let envelope)? = try? JSONParser.parse(payload),
            let header = RequestHeader(envelope)
        else {
            reply("", "", .badRequest(.malformedEnvelope, "not a request envelope"))
            return
        }
        let body = envelope["body"] ?? .null
        guard header.v == wireVersion else {
            reply(
                header.id, header.type, .badRequest(.unsupportedVersion, "envelope version \(header.v) is not \(wireVersion)"))
            return
        }
        if stopping {
            reply(header.id, header.type, ServiceError(.shuttingDown, message: "\(name) is shutting down", status: 503))
            return
        }
        if header.deadline < Timestamp.nowMs() {
            reply(
                header.id, header.type,
                ServiceError(.deadlineExceeded, message: "deadline passed before handling", status: 504))
            return
        }
        if header.type == Ops.Ping.type {
            count("requests.\(header.type)")
            let body = Ops.Ping.Reply(service: name, uptimeMs: Timestamp.nowMs() - startedMs, counters: counterSnapshot())
            if let bytes = try? ReplyEnvelope(id: header.id, type: header.type, body: body, error: nil).encoded() {
                _ = try? router.send(routing + [bytes], dontWait: true)
            }
            return
        }
        guard let handler = handlers.withLock({ $0[header.type] }) else {
            // Counted under one key: a caller cannot grow the counters with made-up types.
            count("requests.unknown_type")
            reply(header.id, header.type, .badRequest(.unknownType, "no handler for \(header.type)"))
            return
        }
        count("requests.\(header.type)")
        let context = RequestContext(
            correlationId: header.id, type: header.type, deadline: header.deadline, trace: header.trace,
            logger: logger)
        inflight[header.id] = routing
        Task(executorPreference: executor) { [self] in
            let replyFrames = await handler(body, binary, context)
            completedIDs.withLock { $0.append(header.id) }
            outgoing.withLock { $0.replies.append(routing + replyFrames) }
            // On the socket thread (the usual case) the reply is taken later in the same turn.
            if !executor.isLoopThread { wakeup.signal() }
        }
    }
}

/// Moves freshly created sockets to the thread that will own them.
private final class SocketBox: @unchecked Sendable {
    // @unchecked: written once before the thread starts, taken once by that thread, never shared.
    private var sockets: (router: ZMQSocket, pub: ZMQSocket)?
    init(router: ZMQSocket, pub: ZMQSocket) { sockets = (router, pub) }
    func take() -> (router: ZMQSocket, pub: ZMQSocket) {
        defer { sockets = nil }
        return sockets!
    }
}
