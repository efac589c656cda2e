import Foundation
import Harness
import TestSupport
import Testing

@testable import BackendKit
@testable import Messages
@testable import ServiceKit
@testable import Storage
@testable import Support
@testable import Transport
@testable import Wire

/// A producer (an in-process host publishing its database's outbox on loopback) and a consumer
/// database, for subscriber tests.
struct ProducerAndConsumer {
    let context = ZMQContext()
    let producer: Database
    let host: ServiceHost
    let client: RPCClient
    let endpoints: (rpc: String, events: String)
    let consumer: Database
    let logger = Logger(service: "test", minimum: .error)
    /// Seqs applied by the consumer's handlers, signalled after each commit.
    let applied = Signal()

    init() async throws {
        let dir = NSTemporaryDirectory() + "outbox-\(RandomID.make())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        producer = try Database(
            location: try TestStorage.location(dir, "p"), producer: "test", migrations: [])
        host = try makeTestHost(context: context, database: producer)
        endpoints = host.boundEndpoints.withLock { $0 }
        client = try RPCClient(
            service: "test", endpoint: endpoints.rpc, context: context, logger: logger, defaultTimeoutMs: 10_000)
        try await waitUntilConnected(client)
        consumer = try Database(
            location: try TestStorage.location(dir, "c"), producer: nil,
            migrations: [Migration("applied", "CREATE TABLE applied(seq INTEGER PRIMARY KEY, n INTEGER NOT NULL)")])
    }

    static let description = ServiceDescription(
        name: "test", envPrefix: "TEST", executable: "", defaultRPCPort: 0, defaultEventsPort: 0)

    /// A durable subscriber to the producer, applying into the consumer database.
    func subscriber() -> EventSubscriber {
        EventSubscriber(
            producer: Self.description, endpoint: endpoints.events, context: context, replay: client, database: consumer,
            logger: logger)
    }

    /// Records an applied event in `tx` (the PRIMARY KEY makes a second application throw).
    func record(_ event: Delivered<TestRPC.Happened>, _ tx: Transaction) throws {
        try tx.query("INSERT INTO applied(seq, n) VALUES (\(event.header.seq), \(event.body.n))")
        let applied = self.applied
        tx.onCommit { applied.add(1) }
    }

    /// Emits `count` events in one producer transaction (`n` = 0..<count).
    func emit(_ count: Int, from first: Int = 0) async throws {
        try await producer.write { tx in
            for n in first..<(first + count) { try tx.emit(TestRPC.Happened(n: n)) }
        }
    }

    func appliedSeqs() async throws -> [Int64] {
        try await consumer.read { try $0.query("SELECT seq FROM applied ORDER BY seq").map { try $0.int64("seq") } }
    }

    func stop() {
        client.shutdown()
        host.stop()
    }
}

/// A count that tasks can wait on, with a deadline that fails the test instead of hanging it.
final class Signal: Sendable {
    private let state = Locked<(count: Int, waiters: [(Int, CheckedContinuation<Void, Never>)])>((0, []))

    func add(_ n: Int) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.count += n
            let ready = s.waiters.filter { s.count >= $0.0 }.map(\.1)
            s.waiters.removeAll { s.count >= $0.0 }
            return ready
        }
        for c in ready { c.resume() }
    }

    var count: Int { state.withLock { $0.count } }

    /// Waits until the count reaches `n`. - Throws: after `timeoutSeconds` (60 by default).
    func wait(for n: Int, timeoutSeconds: Double = 60) async throws {
        let timer = Task {
            try await Task.sleep(for: .seconds(timeoutSeconds))
            let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
                defer { s.waiters.removeAll() }
                return s.waiters.map(\.1)
            }
            for c in waiters { c.resume() }
        }
        defer { timer.cancel() }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.count >= n { return true }
                s.waiters.append((n, c))
                return false
            }
            if done { c.resume() }
        }
        if count < n { throw TimedOut(expected: n, got: count) }
    }

    struct TimedOut: Error {
        var expected: Int
        var got: Int
    }
}

/// Events through the outbox to a subscriber: nothing lost, nothing repeated, in order.
struct OutboxAndSubscriberTests {
    @Test func aSubscriberThatJoinsLateGetsEverythingExactlyOnceInOrder() async throws {
        let p = try await ProducerAndConsumer()
        defer { p.stop() }
        // 50 events published before anyone subscribes: PUB/SUB alone would lose them all.
        try await p.emit(50)
        let subscriber = p.subscriber()
        subscriber.on(TestRPC.Happened.self) { event, tx in
            try p.record(event, tx)
            return .applied
        }
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        try await p.applied.wait(for: 50)
        for i in 0..<10 { try await p.emit(25, from: 50 + 25 * i) }  // then live, in many transactions
        try await p.applied.wait(for: 300)
        #expect(try await p.appliedSeqs() == Array(1...300))
    }

    @Test func theCursorStoredWithTheChangeSurvivesARestartOfTheSubscriber() async throws {
        let p = try await ProducerAndConsumer()
        defer { p.stop() }
        func runSubscriber(until count: Int) async throws {
            let subscriber = p.subscriber()
            subscriber.on(TestRPC.Happened.self) { event, tx in
                try p.record(event, tx)
                return .applied
            }
            let task = Task { try await subscriber.run() }
            try await p.applied.wait(for: count)
            task.cancel()
            _ = await task.result
        }
        try await p.emit(20)
        try await runSubscriber(until: 20)
        try await p.emit(30, from: 20)  // while the subscriber is away
        try await runSubscriber(until: 50)
        #expect(try await p.appliedSeqs() == Array(1...50))
    }

    /// What a handler answers decides what happens: a lookup runs outside the transaction and
    /// the event comes again; a deferred event comes again on the next tick; an event whose
    /// handler keeps failing is skipped after three tries; one that does not decode is skipped
    /// at once. Every other event is applied exactly once, in order.
    @Test func handlerOutcomesAreHonouredInOrder() async throws {
        let p = try await ProducerAndConsumer()
        defer { p.stop() }
        struct Boom: Error {}
        let lookups = Locked(0)
        let deferredOnce = Locked(false)
        let subscriber = p.subscriber()
        subscriber.on(TestRPC.Happened.self) { event, tx in
            switch event.body.n {
            case 10 where event.lookups == 0:
                return .needsLookup { lookups.withLock { $0 += 1 } }
            case 20 where !deferredOnce.withLock({ $0 }):
                deferredOnce.withLock { $0 = true }
                return .deferred
            case 30:
                throw Boom()
            default:
                try p.record(event, tx)
                return .applied
            }
        }
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        try await p.emit(40)  // seq = n + 1
        try await p.producer.write { tx in _ = try tx.emit(TestRPC.Mistyped(n: "not a number")) }  // seq 41
        try await p.emit(1, from: 41)  // seq 42
        try await p.applied.wait(for: 40)
        #expect(try await p.appliedSeqs() == Array(1...40).filter { $0 != 31 } + [42])
        #expect(lookups.withLock { $0 } == 1)
        let counters = subscriber.counters()
        #expect(counters["subscriber.test.skipped"] == 1)
        #expect(counters["subscriber.test.undecodable"] == 1)
        #expect((counters["subscriber.test.deferred"] ?? 0) >= 1)
    }

    /// Events that arrive together are applied together, one transaction for many.
    @Test func eventsThatArriveTogetherAreAppliedInOneTransaction() async throws {
        let p = try await ProducerAndConsumer()
        defer { p.stop() }
        let subscriber = p.subscriber()
        subscriber.on(TestRPC.Happened.self) { event, tx in
            try p.record(event, tx)
            return .applied
        }
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        try await p.emit(300)
        try await p.applied.wait(for: 300)
        #expect(try await p.appliedSeqs() == Array(1...300))
        let commits = p.consumer.counters()["db.commits"] ?? 0
        #expect(commits < 300)  // 300 events, each alone, would have taken 300
    }

    /// Bulk-import-sized events (1.5 MiB each): a replay reply carries about
    /// `Ops.Replay.maxBytes` of them (at least one), a late subscriber still gets every one
    /// exactly once and in order, one per transaction (`EventFeed.maxRunBytes`), and its
    /// `cursor` counter ends at the producer's head.
    @Test func largeEventsAreReplayedAFewAtATimeAndAllArrive() async throws {
        let p = try await ProducerAndConsumer()
        defer { p.stop() }
        let pad = String(repeating: "x", count: 3 << 19)
        try await p.producer.write { tx in
            for n in 0..<6 { try tx.emit(TestRPC.Bulky(n: n, pad: pad)) }
        }
        try await p.emit(3, from: 6)  // small ones after them
        let page = try await p.client.call(Ops.Replay.self, .init(after: 0, limit: 1_000))
        #expect(page.head == 9)
        #expect(page.events.count == 2)  // 3 MiB; a third would pass 4 MiB
        #expect(try await p.producer.outbox(after: 0, limit: 1_000, maxBytes: 10).events.map(\.seq) == [1])
        #expect(try await p.producer.outbox(after: 5, limit: 1_000, maxBytes: 4 << 20).events.map(\.seq) == [6, 7, 8, 9])
        #expect(try await p.producer.outbox(after: 0, limit: 3).events.map(\.seq) == [1, 2, 3])

        let subscriber = p.subscriber()
        subscriber.on(TestRPC.Bulky.self) { event, tx in
            try tx.query("INSERT INTO applied(seq, n) VALUES (\(event.header.seq), \(event.body.n))")
            let applied = p.applied
            tx.onCommit { applied.add(1) }
            return .applied
        }
        subscriber.on(TestRPC.Happened.self) { event, tx in
            try p.record(event, tx)
            return .applied
        }
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        try await p.applied.wait(for: 9)
        #expect(try await p.appliedSeqs() == Array(1...9))
        #expect((p.consumer.counters()["db.commits"] ?? 0) >= 6)  // the large ones one at a time
        // The counter moves once `apply` returns, just after the commit that signalled.
        try await eventually("the cursor counter at 9") { subscriber.counters()["subscriber.test.cursor"] == 9 }
    }

    /// A live subscriber starts at the producer's head, hands each handler its events in order,
    /// and does not decode the ones `accept` turns away.
    @Test func aLiveSubscriberStartsAtTheHeadAndFiltersBeforeDecoding() async throws {
        let p = try await ProducerAndConsumer()
        defer { p.stop() }
        try await p.emit(10)  // before the subscriber: not delivered
        let received = Locked<[Int]>([])
        let signal = Signal()
        let subscriber = LiveEventSubscriber(
            producer: ProducerAndConsumer.description, endpoint: p.endpoints.events, context: p.context,
            replay: p.client, logger: p.logger)
        let accept: @Sendable ([UInt8]) -> Bool = { envelope in
            !String(decoding: envelope, as: UTF8.self).contains(#""n":7"#)
        }
        subscriber.on(
            TestRPC.Happened.self, accept: accept,
            { events in
                received.withLock { $0 += events.map(\.body.n) }
                signal.add(events.count)
            })
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        await subscriber.waitUntilStarted(timeoutMs: 10_000)
        try await p.emit(10, from: 1)  // n = 1...10; 7 is turned away
        try await signal.wait(for: 9)
        #expect(received.withLock { $0 } == [1, 2, 3, 4, 5, 6, 8, 9, 10])
    }
}
