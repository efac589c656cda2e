import CZMQ
import Foundation
import Synchronization

/// An event as received: its header and the whole envelope, to decode by `header.type`.
public struct ReceivedEvent: Sendable {
    public var header: EventHeader
    public var envelope: [UInt8]

    /// Decodes the body as `E` (check `header.type == E.type` first).
    /// - Throws: `DecodingError`.
    public func decode<E: Event>(_ type: E.Type) throws -> E {
        try WireJSON.decode(EventEnvelope<E>.self, from: envelope).body
    }
}

/// Subscribes to one producer's events and delivers each to a handler exactly once, in order.
///
/// PUB/SUB drops at the high-water mark and misses what was sent before the subscriber joined,
/// so this follows the ZeroMQ guide's Clone pattern: it tracks the last sequence number applied,
/// and on (re)join, on a gap, or when the producer's heartbeat shows a newer head, it asks the
/// producer (`ops.replay`) for everything after it. Events at or below the cursor are dropped as
/// duplicates. For exactly-once across restarts, `deliver` applies the event and stores its
/// sequence number in one transaction (`Transaction.setCursor`), and `startAfter` reads it back.
public final class EventSubscriber: Sendable {
    public let producer: String
    private let endpoint: String
    private let context: ZMQContext
    private let replay: RPCClient
    private let logger: Logger
    private let security: TransportSecurity
    private let startAfter: @Sendable () async throws -> Int64
    private let deliver: @Sendable (ReceivedEvent) async throws -> Void
    private let deliverBatch: (@Sendable ([ReceivedEvent]) async throws -> Int)?
    /// Most events handed to `deliverBatch` at once.
    public let maxBatch = 256
    private let stopped = Atomic<Bool>(false)
    /// Events delivered, batches applied through `deliverBatch`, duplicates dropped, gaps
    /// detected, replays run.
    public let stats = Locked<[String: Int64]>([:])

    /// `stats` with keys `subscriber.<producer>.<name>`, for `ServiceHost.addCounters`.
    public func counters() -> [String: Int64] {
        let producer = self.producer
        return Dictionary(uniqueKeysWithValues: stats.withLock { $0 }.map { ("subscriber.\(producer).\($0.key)", $0.value) })
    }

    /// - Parameters:
    ///   - producer: the producer name in the envelopes (`auth`, `profile`, `notification`).
    ///   - eventsEndpoint: the producer's PUB endpoint.
    ///   - replay: an RPC client for the producer (used for `ops.replay`).
    ///   - startAfter: the sequence number already applied (read once at start; 0 = from the beginning).
    ///   - deliver: applies one event; throwing retries it (three times, then it is logged and skipped).
    ///   - deliverBatch: optional; applies a prefix of consecutive events (at least one, at most
    ///     `maxBatch`) and the cursor of the last one it applied, all in one transaction, and
    ///     returns how many it applied. Throwing means none was applied: the first event then
    ///     goes through `deliver` (with its retries) and batching resumes after it. Under load the
    ///     events that arrive together are applied together, one commit for many.
    public init(
        producer: String, eventsEndpoint: String, context: ZMQContext, replay: RPCClient, logger: Logger,
        security: TransportSecurity = .current, startAfter: @escaping @Sendable () async throws -> Int64,
        deliver: @escaping @Sendable (ReceivedEvent) async throws -> Void,
        deliverBatch: (@Sendable ([ReceivedEvent]) async throws -> Int)? = nil
    ) {
        self.producer = producer
        self.endpoint = eventsEndpoint
        self.context = context
        self.replay = replay
        self.logger = logger
        self.security = security
        self.startAfter = startAfter
        self.deliver = deliver
        self.deliverBatch = deliverBatch
    }

    private enum Item: Sendable {
        /// Events received together, in arrival order.
        case events([ReceivedEvent])
        case heartbeat(Int64)
    }

    /// Events the socket thread holds for the delivery loop beyond which it stops reading, so
    /// the socket's receive high-water mark (and then a gap and a replay) bounds memory.
    static let inboxLimit = 50_000

    private func bump(_ key: String, _ n: Int64 = 1) { stats.withLock { $0[key, default: 0] += n } }

    /// Runs until cancelled: connects, catches up, then applies live events.
    ///
    /// The socket thread puts what it receives in an inbox and rings a doorbell; the delivery
    /// loop takes everything in the inbox at once, so the events that pile up while a delivery
    /// runs are applied together in the next (batching grows with the load).
    /// - Throws: `ZMQError` if the SUB socket cannot be created or connected.
    public func run() async throws {
        let sub = try ZMQSocket(context, .sub)
        try SocketDefaults.apply(sub)
        try sub.setHighWaterMarks(send: 1_000, receive: 500_000)
        try security.configureClient(sub, producer)
        try sub.subscribe("")
        try sub.connect(endpoint)
        // The doorbell keeps at most one ring: rings while the loop is busy merge into one.
        let (doorbell, ring) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let inbox = Locked<(items: [Item], events: Int)>(([], 0))
        let box = SubBox(sub)
        let thread = Thread { [self] in
            let sub = box.take()
            let poller = Poller([.socket(sub)])
            while !self.stopped.load(ordering: .acquiring) {
                do {
                    if inbox.withLock({ $0.events }) >= Self.inboxLimit {
                        // The loop is far behind: leave events in the socket for a while.
                        Thread.sleep(forTimeInterval: 0.01)
                        ring.yield()
                        continue
                    }
                    let ready = try poller.poll(timeoutMs: 500)
                    if !ready[0] {
                        ring.yield()  // idle tick: lets the loop retry a catch-up
                        continue
                    }
                    var items: [Item] = []
                    var received: [ReceivedEvent] = []
                    var count = 0
                    while count < self.maxBatch, let frames = try sub.receive(dontWait: true) {
                        guard frames.count == 2 else { continue }
                        if frames[0] == Array("_hb".utf8) {
                            if let hb = try? WireJSON.decode(EventHeartbeat.self, from: frames[1]) {
                                if !received.isEmpty { items.append(.events(received)) }
                                received = []
                                items.append(.heartbeat(hb.seq))
                            }
                        } else if let header = EventHeader.peek(frames[1])
                            ?? (try? WireJSON.decode(EventHeader.self, from: frames[1]))
                        {
                            received.append(ReceivedEvent(header: header, envelope: frames[1]))
                            count += 1
                        }
                    }
                    if !received.isEmpty { items.append(.events(received)) }
                    if !items.isEmpty {
                        inbox.withLock {
                            $0.items += items
                            $0.events += count
                        }
                        ring.yield()
                    }
                } catch {
                    break
                }
            }
            sub.close()
            ring.finish()
        }
        thread.name = "sub.\(producer)"
        thread.start()
        defer {
            stopped.store(true, ordering: .releasing)
        }
        try await withTaskCancellationHandler {
            var cursor = try await startAfter()
            var behind = true  // catch up at start: the producer may have events we missed
            for await _ in doorbell {
                if Task.isCancelled { break }
                let items = inbox.withLock { i -> [Item] in
                    defer { i = ([], 0) }
                    return i.items
                }
                // The run of events that follow the cursor without a gap, applied together.
                var run: [ReceivedEvent] = []
                for item in items {
                    switch item {
                    case .heartbeat(let head):
                        if head > (run.last?.header.seq ?? cursor) { behind = true }
                    case .events(let events):
                        for event in events {
                            let seq = event.header.seq
                            let last = run.last?.header.seq ?? cursor
                            if seq <= last {
                                bump("duplicates")
                            } else if seq == last + 1 && !behind {
                                run.append(event)
                            } else {
                                if !behind { bump("gaps") }
                                behind = true
                            }
                        }
                    }
                }
                if let applied = await applyRun(run) { cursor = applied }
                if behind {
                    if let newCursor = await catchUp(from: cursor) {
                        cursor = newCursor
                        behind = false
                    }
                }
            }
        } onCancel: {
            self.stopped.store(true, ordering: .releasing)
        }
    }

    /// Replays everything after `cursor`; returns the new cursor, or nil if the producer could
    /// not be reached (the caller tries again on the next tick).
    private func catchUp(from start: Int64) async -> Int64? {
        var cursor = start
        while !Task.isCancelled {
            let reply: Ops.Replay.Reply
            do {
                reply = try await replay.call(Ops.Replay.self, .init(after: cursor, limit: 500), timeoutMs: 2_000)
            } catch {
                logger.debug("subscriber.replay_failed", metadata: ["producer": producer, "error": "\(error)"])
                return nil
            }
            bump("replays")
            var run: [ReceivedEvent] = []
            for raw in reply.events {
                let bytes = Array(raw.utf8)
                guard let header = EventHeader.peek(bytes) ?? (try? WireJSON.decode(EventHeader.self, from: bytes))
                else { continue }
                guard header.seq > (run.last?.header.seq ?? cursor) else { continue }
                run.append(ReceivedEvent(header: header, envelope: bytes))
            }
            if let applied = await applyRun(run) { cursor = applied }
            if reply.events.isEmpty || cursor >= reply.head { return cursor }
        }
        return nil
    }

    /// Applies consecutive events in order, `maxBatch` at a time through `deliverBatch` when
    /// there is one; returns the sequence number of the last one (nil for an empty run).
    private func applyRun(_ run: [ReceivedEvent]) async -> Int64? {
        var rest = run[...]
        while !rest.isEmpty {
            var applied = 0
            if let deliverBatch, rest.count > 1 {
                do {
                    applied = min(try await deliverBatch(Array(rest.prefix(maxBatch))), rest.count)
                    bump("delivered", Int64(applied))
                    if applied > 1 { bump("batches") }
                } catch {
                    logger.debug(
                        "subscriber.batch_failed",
                        metadata: ["producer": producer, "seq": "\(rest[rest.startIndex].header.seq)", "error": "\(error)"])
                }
            }
            if applied < 1 {
                _ = await apply(rest[rest.startIndex])
                applied = 1
            }
            rest = rest.dropFirst(applied)
        }
        return run.last?.header.seq
    }

    /// Delivers one event, retrying a failing handler three times before skipping it.
    private func apply(_ event: ReceivedEvent) async -> Bool {
        for attempt in 1...3 {
            do {
                try await deliver(event)
                bump("delivered")
                return true
            } catch {
                logger.error(
                    "subscriber.deliver_failed",
                    metadata: [
                        "producer": producer, "seq": "\(event.header.seq)", "type": event.header.type,
                        "attempt": "\(attempt)", "error": "\(error)",
                    ])
                try? await Task.sleep(for: .milliseconds(20 * attempt))
            }
        }
        bump("skipped")
        return true
    }
}

/// The heartbeat a host publishes on topic `_hb` every second: `{"producer": "...", "seq": head}`.
struct EventHeartbeat: Codable {
    var producer: String
    var seq: Int64
}

private final class SubBox: @unchecked Sendable {
    // @unchecked: written before the thread starts, taken once by it, never shared.
    private var socket: ZMQSocket?
    init(_ socket: ZMQSocket) { self.socket = socket }
    func take() -> ZMQSocket {
        defer { socket = nil }
        return socket!
    }
}
