import Foundation
import Testing

@testable import Shared

/// Events through the outbox to a subscriber: nothing lost, nothing repeated, in order.
struct OutboxAndSubscriberTests {
    let logger = Logger(service: "test", minimum: .error)

    actor Collected {
        var seqs: [Int64] = []
        var waiters: [(Int, CheckedContinuation<Void, Never>)] = []
        func add(_ s: Int64) {
            seqs.append(s)
            let ready = waiters.filter { seqs.count >= $0.0 }
            waiters.removeAll { seqs.count >= $0.0 }
            for w in ready { w.1.resume() }
        }
        func wait(for n: Int) async {
            if seqs.count >= n { return }
            await withCheckedContinuation { waiters.append((n, $0)) }
        }
    }

    @Test func subscriberThatJoinsLateGetsEverythingExactlyOnceInOrder() async throws {
        let dir = NSTemporaryDirectory() + "outbox-\(RandomID.make())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let context = ZMQContext()
        let db = try Database(path: "\(dir)/p.sqlite", producer: "p", migrations: [])
        let host = try makeTestHost(context: context, database: db)
        defer { host.stop() }
        let endpoints = host.boundEndpoints.withLock { $0 }
        let client = try RPCClient(service: "p", endpoint: endpoints.rpc, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        // 50 events published before anyone subscribes: PUB/SUB alone would lose them all.
        _ = try await client.call(TestRPC.Emit.self, .init(count: 50), timeoutMs: 10_000)
        let collected = Collected()
        let subscriber = EventSubscriber(
            producer: "p", eventsEndpoint: endpoints.events, context: context, replay: client, logger: logger,
            startAfter: { 0 }, deliver: { event in await collected.add(event.header.seq) })
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        await collected.wait(for: 50)
        // Then live events, in many transactions.
        for _ in 0..<10 { _ = try await client.call(TestRPC.Emit.self, .init(count: 25), timeoutMs: 10_000) }
        await collected.wait(for: 300)
        #expect(await collected.seqs == Array(1...300))
    }

    @Test func cursorAppliedInTheSameTransactionSurvivesARestartOfTheSubscriber() async throws {
        let dir = NSTemporaryDirectory() + "outbox-\(RandomID.make())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let context = ZMQContext()
        let producerDB = try Database(path: "\(dir)/p.sqlite", producer: "p", migrations: [])
        let host = try makeTestHost(context: context, database: producerDB)
        defer { host.stop() }
        let endpoints = host.boundEndpoints.withLock { $0 }
        let client = try RPCClient(service: "p", endpoint: endpoints.rpc, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        let consumerDB = try Database(
            path: "\(dir)/c.sqlite", producer: nil, migrations: ["CREATE TABLE applied(seq INTEGER PRIMARY KEY)"])

        func runSubscriber(until count: Int) async throws {
            let done = Collected()
            let subscriber = EventSubscriber(
                producer: "p", eventsEndpoint: endpoints.events, context: context, replay: client, logger: logger,
                startAfter: { try await consumerDB.write { try $0.cursor(for: "p") } },
                deliver: { event in
                    try await consumerDB.write { tx in
                        // PRIMARY KEY: a second application of the same event would throw.
                        try tx.query("INSERT INTO applied(seq) VALUES (?)", [event.header.seq])
                        try tx.setCursor(event.header.seq, for: "p")
                    }
                    await done.add(event.header.seq)
                })
            let task = Task { try await subscriber.run() }
            let applied = { try await consumerDB.read { try $0.queryOne("SELECT COUNT(*) FROM applied")?.int(0) ?? 0 } }
            while try await applied() < count { await done.wait(for: (await done.seqs.count) + 1) }
            task.cancel()
            _ = await task.result
        }
        _ = try await client.call(TestRPC.Emit.self, .init(count: 20), timeoutMs: 10_000)
        try await runSubscriber(until: 20)
        // Events while the subscriber is away, then it comes back.
        _ = try await client.call(TestRPC.Emit.self, .init(count: 30), timeoutMs: 10_000)
        try await runSubscriber(until: 50)
        let seqs = try await consumerDB.read { try $0.query("SELECT seq FROM applied ORDER BY seq").map { $0.int(0) } }
        #expect(seqs == Array(1...50))
    }

    @Test func writesWhoseCallerGaveUpAreNotApplied() async throws {
        let dir = NSTemporaryDirectory() + "outbox-\(RandomID.make())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let context = ZMQContext()
        let db = try Database(path: "\(dir)/p.sqlite", producer: "p", migrations: [])
        let host = try makeTestHost(context: context, database: db)
        defer { host.stop() }
        let client = try RPCClient(
            service: "p", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        // The writer is busy for 1.5 s; an emit with a 300 ms deadline queues behind it.
        async let hold: Empty = client.call(TestRPC.HoldWriter.self, .init(ms: 1_500), timeoutMs: 10_000)
        while (host.counterSnapshot()["requests.test.hold_writer"] ?? 0) < 1 { await Task.yield() }
        await #expect(throws: ServiceError.self) {
            _ = try await client.call(TestRPC.Emit.self, .init(count: 5), timeoutMs: 300)
        }
        _ = try await hold
        // Once the writer is free, the abandoned emit is skipped rather than applied late.
        _ = try await client.call(TestRPC.Emit.self, .init(count: 1), timeoutMs: 5_000)
        let (head, _) = try await db.outbox(after: 0, limit: 0)
        #expect(head == 1)
    }

    /// Events that arrive together go to `deliverBatch` together; a batch handler may apply a
    /// prefix, and one it refuses goes through `deliver` alone: still exactly once, in order.
    @Test func eventsThatArriveTogetherAreDeliveredInBatchesExactlyOnce() async throws {
        let dir = NSTemporaryDirectory() + "outbox-\(RandomID.make())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let context = ZMQContext()
        let producerDB = try Database(path: "\(dir)/p.sqlite", producer: "p", migrations: [])
        let host = try makeTestHost(context: context, database: producerDB)
        defer { host.stop() }
        let endpoints = host.boundEndpoints.withLock { $0 }
        let client = try RPCClient(
            service: "p", endpoint: endpoints.rpc, context: context, logger: logger, defaultTimeoutMs: 10_000)
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        let consumerDB = try Database(
            path: "\(dir)/c.sqlite", producer: nil, migrations: ["CREATE TABLE applied(seq INTEGER PRIMARY KEY)"])
        struct Refused: Error {}
        let done = Collected()
        let singles = Locked<[Int64]>([])
        let batchSizes = Locked<[Int]>([])
        let subscriber = EventSubscriber(
            producer: "p", eventsEndpoint: endpoints.events, context: context, replay: client, logger: logger,
            startAfter: { try await consumerDB.write { try $0.cursor(for: "p") } },
            deliver: { event in
                let seq = event.header.seq
                try await consumerDB.write { tx in
                    try tx.query("INSERT INTO applied(seq) VALUES (?)", [seq])
                    try tx.setCursor(seq, for: "p")
                }
                singles.withLock { $0.append(seq) }
                await done.add(seq)
            },
            deliverBatch: { events in
                // Seq 42 is refused at the front of a batch and ends a batch anywhere else.
                if events[0].header.seq == 42 { throw Refused() }
                let prefix = Array(events.prefix { $0.header.seq != 42 })
                try await consumerDB.write { tx in
                    for event in prefix { try tx.query("INSERT INTO applied(seq) VALUES (?)", [event.header.seq]) }
                    try tx.setCursor(prefix.last!.header.seq, for: "p")
                }
                batchSizes.withLock { $0.append(prefix.count) }
                for event in prefix { await done.add(event.header.seq) }
                return prefix.count
            })
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        // 300 events in one transaction: published back to back, received together.
        _ = try await client.call(TestRPC.Emit.self, .init(count: 300))
        await done.wait(for: 300)
        #expect(await done.seqs == Array(1...300))
        let applied = try await consumerDB.read { try $0.query("SELECT seq FROM applied ORDER BY seq").map { $0.int(0) } }
        #expect(applied == Array(1...300))
        #expect(singles.withLock { $0 } == [42])
        #expect((batchSizes.withLock { $0 }.max() ?? 0) > 1)
        #expect((subscriber.stats.withLock { $0["batches"] } ?? 0) > 0)
    }
}
