import Foundation
import Messages
import Support
import Transport
import Wire

/// Delivers one producer's events to in-memory handlers, starting at the producer's current
/// head (the gateway keeps no durable state): `subscriber.on(Auth.SessionRevoked.self) { events
/// in ... }`, each event decoded once, the events that arrived together handed over together.
public final class LiveEventSubscriber: Service {
    public let producer: ServiceDescription
    private let logger: Logger
    private let handlers = Locked<[String: Handler]>([:])
    private let feed = Locked<EventFeed?>(nil)
    private let connection: (endpoint: String, context: ZMQContext, replay: RPCClient, security: TransportSecurity)
    private let started = Locked<(known: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    typealias Handler = (
        accept: (@Sendable ([UInt8]) -> Bool)?, apply: @Sendable ([RawEvent]) async -> Void
    )

    public init(
        producer: ServiceDescription, endpoint: String, context: ZMQContext, replay: RPCClient, logger: Logger,
        security: TransportSecurity = .current
    ) {
        self.producer = producer
        self.logger = logger.with(["producer": producer.name])
        self.connection = (endpoint, context, replay, security)
    }

    /// Registers the handler for events of type `E` (call before `run()`).
    /// - Parameter accept: optional; looks at an event's raw envelope and returns false for
    ///   events the handler does not want, which are then not decoded at all.
    public func on<E: Event>(
        _ type: E.Type, accept: (@Sendable ([UInt8]) -> Bool)? = nil,
        _ handler: @escaping @Sendable ([Delivered<E>]) async -> Void
    ) {
        let logger = self.logger
        handlers.withLock {
            $0[E.type] = (
                accept,
                { raws in
                    var delivered: [Delivered<E>] = []
                    delivered.reserveCapacity(raws.count)
                    for raw in raws {
                        do {
                            let body = try WireJSON.decode(EventEnvelope<E>.self, from: raw.envelope).body
                            delivered.append(Delivered(body: body, header: raw.header, lookups: 0))
                        } catch {
                            logger.error(
                                "subscriber.undecodable", metadata: ["seq": "\(raw.header.seq)", "error": "\(error)"])
                        }
                    }
                    if !delivered.isEmpty { await handler(delivered) }
                }
            )
        }
    }

    /// Counters `subscriber.<producer>.*`.
    public func counters() -> [String: Int64] { feed.withLock { $0 }?.counters() ?? [:] }

    /// Waits until the subscriber knows the producer's head (events created after that reach
    /// the handlers), or `timeoutMs` has passed.
    public func waitUntilStarted(timeoutMs: Int) async {
        let timer = Task {
            try await Task.sleep(for: .milliseconds(timeoutMs))
            self.markStarted()
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let known = started.withLock { s -> Bool in
                if s.known { return true }
                s.waiters.append(c)
                return false
            }
            if known { c.resume() }
        }
        timer.cancel()
    }

    private func markStarted() {
        let waiters = started.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.known = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }

    /// Runs until cancelled, starting at the producer's head (asked with `ops.replay` limit 0,
    /// retried until it answers).
    /// - Throws: `ZMQError` if the SUB socket cannot be created or connected.
    public func run() async throws {
        let replay = connection.replay
        let feed = EventFeed(
            producer: producer, endpoint: connection.endpoint, context: connection.context, replay: replay,
            logger: logger, security: connection.security,
            startAfter: { [unowned self] in
                var delayMs = 50
                while true {
                    try Task.checkCancellation()
                    if let reply = try? await replay.call(Ops.Replay.self, .init(after: 0, limit: 0), timeoutMs: 1_000) {
                        self.markStarted()
                        return reply.head
                    }
                    try await Task.sleep(for: .milliseconds(delayMs))
                    delayMs = min(delayMs * 2, 1_000)
                }
            },
            apply: { [unowned self] run in
                await self.apply(run)
                return run.count
            })
        self.feed.withLock { $0 = feed }
        try await feed.run()
    }

    /// Hands each handler its events of the run, in order, grouped by consecutive type.
    private func apply(_ run: [RawEvent]) async {
        let handlers = self.handlers.withLock { $0 }
        var group: [RawEvent] = []
        var groupType = ""
        func flush() async {
            if let handler = handlers[groupType], !group.isEmpty { await handler.apply(group) }
            group = []
        }
        for event in run {
            guard let handler = handlers[event.header.type] else { continue }
            if let accept = handler.accept, !accept(event.envelope) { continue }
            if event.header.type != groupType {
                await flush()
                groupType = event.header.type
            }
            group.append(event)
        }
        await flush()
    }
}
