import CZMQ
import Foundation
import Messages
import Support
import Synchronization
import Transport
import Wire

/// An event as received, before decoding: its header (read without parsing the body, see
/// `EventHeader.peek`) and the whole envelope.
public struct RawEvent: Sendable {
    public var header: EventHeader
    public var envelope: [UInt8]

    public init(header: EventHeader, envelope: [UInt8]) {
        self.header = header
        self.envelope = envelope
    }
}

/// One producer's events in order, each handed on exactly once: the transport under
/// `EventSubscriber` and `LiveEventSubscriber`.
///
/// PUB/SUB drops at the high-water mark and misses what was sent before the subscriber joined,
/// so this follows the ZeroMQ guide's Clone pattern: it tracks the last sequence number applied,
/// and on (re)join, on a gap, or when the producer's heartbeat shows a newer head, it asks the
/// producer (`ops.replay`) for everything after it. Events at or below the cursor are dropped as
/// duplicates.
///
/// The socket thread puts what it receives in an inbox and rings a doorbell; the delivery loop
/// takes everything in the inbox at once and hands runs of consecutive events to `apply`, so the
/// events that pile up while one run is applied are applied together in the next (batching
/// grows with the load).
package final class EventFeed: Sendable {
    package let producer: ServiceDescription
    private let endpoint: String
    private let context: ZMQContext
    private let replay: RPCClient
    private let logger: Logger
    private let security: TransportSecurity
    /// The sequence number already applied (read once at start; 0 = from the beginning).
    private let startAfter: @Sendable () async throws -> Int64
    /// The cursor as stored, read again before each catch-up (nil: none is stored).
    private let storedCursor: (@Sendable () async throws -> Int64)?
    /// Applies a run of consecutive events, oldest first, and returns how many of them, from
    /// the front, are applied; the rest are fetched again by a replay on the next tick.
    private let apply: @Sendable ([RawEvent]) async -> Int
    private let stopped = Atomic<Bool>(false)
    /// Events delivered, duplicates dropped, gaps detected, replays run, and what the consumer adds.
    package let stats = Locked<[String: Int64]>([:])

    /// Most events in one run handed to `apply`.
    package static let maxRun = 256
    /// Most envelope bytes in one run handed to `apply` (1 MiB; at least one event): runs of
    /// bulk-import events, hundreds of KB each, are applied a few at a time, so the consumer's
    /// transactions stay short and its requests keep being served while it catches up.
    package static let maxRunBytes = 1 << 20
    /// Events the socket thread holds for the delivery loop beyond which it stops reading, so
    /// the socket's receive high-water mark (and then a gap and a replay) bounds memory.
    package static let inboxLimit = 50_000

    package init(
        producer: ServiceDescription, endpoint: String, context: ZMQContext, replay: RPCClient, logger: Logger,
        security: TransportSecurity, startAfter: @escaping @Sendable () async throws -> Int64,
        storedCursor: (@Sendable () async throws -> Int64)? = nil, apply: @escaping @Sendable ([RawEvent]) async -> Int
    ) {
        self.storedCursor = storedCursor
        self.producer = producer
        self.endpoint = endpoint
        self.context = context
        self.replay = replay
        self.logger = logger
        self.security = security
        self.startAfter = startAfter
        self.apply = apply
    }

    package func bump(_ key: String, _ n: Int64 = 1) { stats.withLock { $0[key, default: 0] += n } }

    /// Records the last sequence number applied (counter `cursor`: how far this consumer is,
    /// compared with the producer's head, e.g. by a load test waiting for replicas to catch up).
    private func record(cursor: Int64) { stats.withLock { $0["cursor"] = cursor } }

    /// `stats` with keys `subscriber.<producer>.<name>`, for `ServiceHost.addCounters`.
    package func counters() -> [String: Int64] {
        let producer = self.producer.name
        return Dictionary(uniqueKeysWithValues: stats.withLock { $0 }.map { ("subscriber.\(producer).\($0.key)", $0.value) })
    }

    private enum Item: Sendable {
        /// Events received together, in arrival order.
        case events([RawEvent])
        case heartbeat(Int64)
    }

    /// Runs until cancelled: connects, catches up, then applies live events.
    /// - Throws: `ZMQError` if the SUB socket cannot be created or connected, or what
    ///   `startAfter` throws.
    package func run() async throws {
        // One SUB per replica of the producer (only the elected one publishes), each kept
        // connected to the address of its endpoint's host, looked up off libzmq's I/O thread, by
        // its own connector: a socket has one monitor, and each connector needs its own
        // connection's events to look its host up again.
        let wakeup = Wakeup()
        var sockets: [(ZMQSocket, PeerConnector)] = []
        for replica in RPCClient.split(endpoint) {
            let sub = try ZMQSocket(context, .sub)
            try SocketDefaults.applyStreaming(sub)
            try sub.setHighWaterMarks(send: 1_000, receive: 500_000)
            try security.configureClient(sub, producer.name)
            try sub.subscribe("")
            sockets.append(
                (
                    sub,
                    try PeerConnector(
                        socket: sub, endpoint: replica, wakeup: wakeup, logger: logger.with(["peer": producer.name]))
                ))
        }
        // The doorbell keeps at most one ring: rings while the loop is busy merge into one.
        let (doorbell, ring) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let inbox = Locked<(items: [Item], events: Int)>(([], 0))
        let box = SocketBox(sockets)
        let thread = Thread { [self] in
            let sockets = box.take()
            let n = sockets.count
            // Items: the SUBs, then their monitors, then the wakeup.
            let poller = Poller(sockets.map { .socket($0.0) } + sockets.map { .socket($0.1.monitor) } + [.fd(wakeup.fd)])
            while !self.stopped.load(ordering: .acquiring) {
                do {
                    if inbox.withLock({ $0.events }) >= Self.inboxLimit {
                        // The loop is far behind: leave events in the sockets for a while.
                        Thread.sleep(forTimeInterval: 0.01)
                        ring.yield()
                        continue
                    }
                    let now = Timestamp.nowMs()
                    let lookupDue = sockets.compactMap { $0.1.service(nowMs: now) }.min()
                    let ready = try poller.poll(timeoutMs: Int(min(500, lookupDue ?? 500)))
                    if ready[2 * n] { wakeup.drain() }
                    for (i, socket) in sockets.enumerated() where ready[n + i] { _ = try socket.1.receiveEvents() }
                    if !ready.prefix(n).contains(true) {
                        ring.yield()  // idle tick: lets the loop retry a catch-up
                        continue
                    }
                    var items: [Item] = []
                    var received: [RawEvent] = []
                    var count = 0
                    for (i, socket) in sockets.enumerated() where ready[i] {
                        while count < Self.maxRun, let frames = try socket.0.receive(dontWait: true) {
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
                                received.append(RawEvent(header: header, envelope: frames[1]))
                                count += 1
                            }
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
            for (sub, connector) in sockets {
                sub.close()
                connector.close()
            }
            ring.finish()
        }
        thread.name = "sub.\(producer.name)"
        thread.start()
        defer { stopped.store(true, ordering: .releasing) }
        try await withTaskCancellationHandler {
            var cursor = try await startAfter()
            record(cursor: cursor)
            var behind = true  // catch up at start: the producer may have events we missed
            for await _ in doorbell {
                if Task.isCancelled { break }
                let items = inbox.withLock { i -> [Item] in
                    defer { i = ([], 0) }
                    return i.items
                }
                // The run of events that follow the cursor without a gap, applied together.
                var run: [RawEvent] = []
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
                let (applied, complete) = await applyRun(run, from: cursor)
                cursor = applied
                if !complete { behind = true }
                if behind {
                    let (caughtUpTo, done) = await catchUp(from: cursor)
                    cursor = caughtUpTo
                    if done { behind = false }
                }
            }
        } onCancel: {
            self.stopped.store(true, ordering: .releasing)
        }
    }

    /// Hands `run` to the consumer `maxRun` events (and `maxRunBytes`) at a time.
    /// - Returns: the new cursor, and whether the whole run was applied.
    private func applyRun(_ run: [RawEvent], from cursor: Int64) async -> (cursor: Int64, complete: Bool) {
        var rest = run[...]
        var cursor = cursor
        while !rest.isEmpty {
            var size = 0
            let chunk = Array(
                rest.prefix(Self.maxRun).prefix { event in
                    defer { size += event.envelope.count }
                    return size == 0 || size + event.envelope.count <= Self.maxRunBytes
                })
            let applied = min(max(await apply(chunk), 0), chunk.count)
            if applied > 0 {
                cursor = chunk[applied - 1].header.seq
                record(cursor: cursor)
                bump("delivered", Int64(applied))
                if applied > 1 { bump("batches") }
            }
            if applied < chunk.count { return (cursor, false) }
            rest = rest.dropFirst(applied)
        }
        return (cursor, true)
    }

    /// Replays everything after `cursor`.
    /// - Returns: the new cursor, and false if the producer could not be reached or the consumer
    ///   stopped early (the caller tries again on the next tick).
    private func catchUp(from start: Int64) async -> (cursor: Int64, done: Bool) {
        // The stored cursor may be ahead: another replica of the consumer applied events
        // while this one believed it was the active one.
        var cursor = start
        if let storedCursor, let stored = try? await storedCursor(), stored > start { cursor = stored }
        if cursor > start { record(cursor: cursor) }
        while !Task.isCancelled {
            let reply: Ops.Replay.Reply
            do {
                reply = try await replay.call(Ops.Replay.self, .init(after: cursor, limit: 500), timeoutMs: 2_000)
            } catch {
                logger.debug("subscriber.replay_failed", metadata: ["producer": producer.name, "error": "\(error)"])
                return (cursor, false)
            }
            bump("replays")
            var run: [RawEvent] = []
            for raw in reply.events {
                let bytes = Array(raw.utf8)
                guard let header = EventHeader.peek(bytes) ?? (try? WireJSON.decode(EventHeader.self, from: bytes))
                else { continue }
                guard header.seq > (run.last?.header.seq ?? cursor) else { continue }
                run.append(RawEvent(header: header, envelope: bytes))
            }
            let (applied, complete) = await applyRun(run, from: cursor)
            cursor = applied
            if !complete { return (cursor, false) }
            if reply.events.isEmpty || cursor >= reply.head { return (cursor, true) }
        }
        return (cursor, false)
    }
}

/// The heartbeat a host publishes on topic `_hb` every second: `{"producer": "...", "seq": head}`.
package struct EventHeartbeat: Codable {
    package var producer: String
    package var seq: Int64
}

private final class SocketBox: @unchecked Sendable {
    // @unchecked: written before the thread starts, taken once by it, never shared.
    private var sockets: [(ZMQSocket, PeerConnector)]?
    package init(_ sockets: [(ZMQSocket, PeerConnector)]) { self.sockets = sockets }
    package func take() -> [(ZMQSocket, PeerConnector)] {
        defer { sockets = nil }
        return sockets!
    }
}
