import Foundation
import Messages
import ServiceKit
import Storage
import Support
import Transport
import Wire

/// What a durable handler did with an event.
public enum EventOutcome: Sendable {
    /// Applied in the transaction (or nothing to do); the subscriber's cursor moves past the
    /// event in the same transaction.
    case applied
    /// The handler needs data it does not have yet (e.g. a user its replica has not seen) and
    /// changed nothing. The subscriber commits the events before it, runs `lookup` outside any
    /// transaction, and delivers the event again with `lookups` one higher.
    case needsLookup(@Sendable () async throws -> Void)
    /// The event cannot be applied now (something it follows is not finished) and nothing was
    /// changed. The subscriber commits the events before it and delivers it again on its next
    /// tick (about half a second), keeping the order.
    case deferred
}

/// Applies one producer's events to a service's database, exactly once and in order, through
/// typed handlers: `subscriber.on(Profile.PostLiked.self) { event, tx in ...; return .applied }`.
///
/// Each event is decoded once, by the handler registered for its type (other types only move
/// the cursor). The events that arrive together are applied in one transaction, each in its own
/// savepoint, with the subscriber's cursor (table `event_cursor`, owned by this type) stored in
/// the same transaction as the last change: a restart or a replay never applies an event twice,
/// and never skips one. A handler that throws has its event retried alone, three times, then it
/// is logged and skipped (`skipped` counter); an event that does not decode is logged and
/// skipped at once (`undecodable`).
public final class EventSubscriber: Service {
    public let producer: ServiceDescription
    private let database: Database
    private let logger: Logger
    private let handlers = Locked<[String: Handler]>([:])
    private let feed = Locked<EventFeed?>(nil)
    private let connection: (endpoint: String, context: ZMQContext, replay: RPCClient, security: TransportSecurity)

    typealias Handler = @Sendable (RawEvent, Transaction, Int) throws -> EventOutcome

    /// - Parameters:
    ///   - producer: whose events (`ServiceDescription.auth`, ...).
    ///   - endpoint: the producer's PUB endpoint.
    ///   - replay: an RPC client for the producer (`ops.replay`).
    ///   - database: where handlers apply events and the cursor is kept.
    public init(
        producer: ServiceDescription, endpoint: String, context: ZMQContext, replay: RPCClient, database: Database,
        logger: Logger, security: TransportSecurity = .current
    ) {
        self.producer = producer
        self.database = database
        self.logger = logger.with(["producer": producer.name])
        self.connection = (endpoint, context, replay, security)
    }

    /// Registers the handler for events of type `E` (call before `run()`). It runs inside the
    /// write transaction, on the writer's queue: it must not block on anything but the database.
    public func on<E: Event>(
        _ type: E.Type, _ handler: @escaping @Sendable (Delivered<E>, Transaction) throws -> EventOutcome
    ) {
        handlers.withLock {
            $0[E.type] = { raw, tx, lookups in
                let body: E
                do { body = try WireJSON.decode(EventEnvelope<E>.self, from: raw.envelope).body } catch {
                    throw Undecodable(error: error)
                }
                return try handler(Delivered(body: body, header: raw.header, lookups: lookups), tx)
            }
        }
    }

    /// Counters `subscriber.<producer>.*` for `ServiceHost.addCounters`.
    public func counters() -> [String: Int64] { feed.withLock { $0 }?.counters() ?? [:] }

    /// Runs until cancelled.
    /// - Throws: `ZMQError` if the SUB socket cannot be created or connected, the engine's error
    ///   when the cursor cannot be read.
    public func run() async throws {
        let producerName = producer.name
        let database = self.database
        let feed = EventFeed(
            producer: producer, endpoint: connection.endpoint, context: connection.context, replay: connection.replay,
            logger: logger, security: connection.security,
            startAfter: { try await database.cursor(for: producerName) },
            storedCursor: { try await database.cursor(for: producerName) },
            apply: { [unowned self] run in await self.apply(run) })
        self.feed.withLock { $0 = feed }
        try await feed.run()
    }

    private struct Undecodable: Error {
        var error: any Error
    }

    /// What a batch transaction stopped at.
    private enum Stop: Sendable {
        case lookup(@Sendable () async throws -> Void)
        case deferred
        case failed(any Error)
    }

    /// Applies as much of `run` as it can; returns how many events from the front are applied.
    /// A batch that fails is retried one event at a time, so the failing event is found and
    /// retried alone (three times, then skipped) while the others are applied.
    private func apply(_ run: [RawEvent]) async -> Int {
        var done = 0
        var lookups = 0
        var isolating = false
        var failures = 0
        while done < run.count {
            let slice = isolating ? [run[done]] : Array(run[done...])
            let (applied, stop) = await applyBatch(slice, lookups: lookups)
            if applied > 0 {
                done += applied
                lookups = 0
                failures = 0
            }
            switch stop {
            case nil:
                continue
            case .lookup(let lookup):
                do {
                    try await lookup()
                    lookups += 1
                } catch {
                    logger.warning(
                        "subscriber.lookup_failed", metadata: ["seq": "\(run[done].header.seq)", "error": "\(error)"])
                    return done
                }
            case .deferred:
                feed.withLock { $0 }?.bump("deferred")
                return done
            case .failed(let error as CursorMoved):
                // Another replica applied these: the feed reads the cursor again and goes on
                // from there (see `EventFeed`).
                logger.warning("subscriber.fenced", metadata: ["error": "\(error)"])
                feed.withLock { $0 }?.bump("fenced")
                return done
            case .failed(let error):
                guard isolating else {
                    isolating = true  // find the failing event: one at a time from here
                    continue
                }
                failures += 1
                let event = run[done]
                logger.error(
                    "subscriber.apply_failed",
                    metadata: [
                        "seq": "\(event.header.seq)", "type": event.header.type, "attempt": "\(failures)",
                        "error": "\(error)",
                    ])
                if failures >= 3 {
                    guard await skip(event) else { return done }
                    feed.withLock { $0 }?.bump("skipped")
                    done += 1
                    failures = 0
                    isolating = false
                } else {
                    try? await Task.sleep(for: .milliseconds(20 * failures))
                }
            }
        }
        return done
    }

    /// Applies a prefix of `events` in one transaction; returns how many, and why it stopped
    /// before the end (nil: it did not).
    private func applyBatch(_ events: [RawEvent], lookups: Int) async -> (Int, Stop?) {
        let handlers = self.handlers.withLock { $0 }
        let producer = self.producer.name
        let logger = self.logger
        let feed = self.feed.withLock { $0 }
        do {
            return try await database.write { tx -> (Int, Stop?) in
                var applied = 0
                var stop: Stop?
                for (i, event) in events.enumerated() {
                    guard let handler = handlers[event.header.type] else {
                        applied += 1
                        continue
                    }
                    // Each event in a savepoint: kept when applied, rolled back otherwise.
                    do {
                        let outcome = try tx.connection.savepoint({ try handler(event, tx, i == 0 ? lookups : 0) }) {
                            if case .applied = $0 { true } else { false }
                        }
                        switch outcome {
                        case .applied:
                            applied += 1
                            continue
                        case .needsLookup(let lookup): stop = .lookup(lookup)
                        case .deferred: stop = .deferred
                        }
                    } catch let error as Undecodable {
                        logger.error(
                            "subscriber.undecodable",
                            metadata: ["seq": "\(event.header.seq)", "type": event.header.type, "error": "\(error.error)"])
                        feed?.bump("undecodable")
                        applied += 1
                        continue
                    }
                    break
                }
                if applied > 0 {
                    try tx.setCursor(
                        events[applied - 1].header.seq, for: producer, expected: events[0].header.seq - 1)
                }
                return (applied, stop)
            }
        } catch {
            return (0, .failed(error))
        }
    }

    /// Moves the cursor past an event that failed three times. - Returns: whether it did.
    private func skip(_ event: RawEvent) async -> Bool {
        let producer = self.producer.name
        do {
            try await database.write { tx in
                try tx.setCursor(event.header.seq, for: producer, expected: event.header.seq - 1)
            }
            return true
        } catch {
            logger.error("subscriber.skip_failed", metadata: ["seq": "\(event.header.seq)", "error": "\(error)"])
            return false
        }
    }
}
