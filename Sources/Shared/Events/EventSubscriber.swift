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
    private let stopped = Atomic<Bool>(false)
    /// Events delivered, duplicates dropped, gaps detected, replays run.
    public let stats = Locked<[String: Int64]>([:])

    /// - Parameters:
    ///   - producer: the producer name in the envelopes (`auth`, `profile`, `notification`).
    ///   - eventsEndpoint: the producer's PUB endpoint.
    ///   - replay: an RPC client for the producer (used for `ops.replay`).
    ///   - startAfter: the sequence number already applied (read once at start; 0 = from the beginning).
    ///   - deliver: applies one event; throwing retries it (three times, then it is logged and skipped).
    public init(
        producer: String, eventsEndpoint: String, context: ZMQContext, replay: RPCClient, logger: Logger,
        security: TransportSecurity = .current, startAfter: @escaping @Sendable () async throws -> Int64,
        deliver: @escaping @Sendable (ReceivedEvent) async throws -> Void
    ) {
        self.producer = producer
        self.endpoint = eventsEndpoint
        self.context = context
        self.replay = replay
        self.logger = logger
        self.security = security
        self.startAfter = startAfter
        self.deliver = deliver
    }

    private enum Item: Sendable {
        case event(ReceivedEvent)
        case heartbeat(Int64)
        case tick
    }

    private func bump(_ key: String, _ n: Int64 = 1) { stats.withLock { $0[key, default: 0] += n } }

    /// Runs until cancelled: connects, catches up, then applies live events.
    /// - Throws: `ZMQError` if the SUB socket cannot be created or connected.
    public func run() async throws {
        let sub = try ZMQSocket(context, .sub)
        try SocketDefaults.apply(sub)
        try sub.setHighWaterMarks(send: 1_000, receive: 500_000)
        try security.configureClient(sub, producer)
        try sub.subscribe("")
        try sub.connect(endpoint)
        let (stream, continuation) = AsyncStream<Item>.makeStream(bufferingPolicy: .unbounded)
        let box = SubBox(sub)
        let thread = Thread { [self] in
            let sub = box.take()
            let poller = Poller([.socket(sub)])
            while !self.stopped.load(ordering: .acquiring) {
                do {
                    let ready = try poller.poll(timeoutMs: 500)
                    if !ready[0] {
                        continuation.yield(.tick)
                        continue
                    }
                    while let frames = try sub.receive(dontWait: true) {
                        guard frames.count == 2 else { continue }
                        if frames[0] == Array("_hb".utf8) {
                            if let hb = try? WireJSON.decode(EventHeartbeat.self, from: frames[1]) {
                                continuation.yield(.heartbeat(hb.seq))
                            }
                        } else if let header = try? WireJSON.decode(EventHeader.self, from: frames[1]) {
                            continuation.yield(.event(ReceivedEvent(header: header, envelope: frames[1])))
                        }
                    }
                } catch {
                    break
                }
            }
            sub.close()
            continuation.finish()
        }
        thread.name = "sub.\(producer)"
        thread.start()
        defer {
            stopped.store(true, ordering: .releasing)
        }
        try await withTaskCancellationHandler {
            var cursor = try await startAfter()
            var behind = true  // catch up at start: the producer may have events we missed
            for await item in stream {
                if Task.isCancelled { break }
                switch item {
                case .tick:
                    break
                case .heartbeat(let head):
                    if head > cursor { behind = true }
                case .event(let event):
                    let seq = event.header.seq
                    if seq <= cursor {
                        bump("duplicates")
                    } else if seq == cursor + 1 && !behind {
                        if await apply(event) { cursor = seq }
                    } else {
                        if !behind { bump("gaps") }
                        behind = true
                    }
                }
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
            for raw in reply.events {
                let bytes = Array(raw.utf8)
                guard let header = try? WireJSON.decode(EventHeader.self, from: bytes) else { continue }
                guard header.seq > cursor else { continue }
                if await apply(ReceivedEvent(header: header, envelope: bytes)) {
                    cursor = header.seq
                } else {
                    return nil
                }
            }
            if reply.events.isEmpty || cursor >= reply.head { return cursor }
        }
        return nil
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
