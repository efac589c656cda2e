import Foundation
import Harness
import TestSupport
import Testing

@testable import BackendKit
@testable import ServiceKit
@testable import Storage
@testable import Support
@testable import Transport
@testable import Wire

/// `RPCClient` over several replicas of one service, and the pieces of the replica design that
/// need no PostgreSQL (`Doorbell`, the fenced cursor on both engines).
struct ReplicaClientTests {
    /// The `test.echo` host that answered: each test host is told its name through the reply.
    static func hosts(_ context: ZMQContext, count: Int) throws -> [ServiceHost] {
        try (0..<count).map { _ in try makeTestHost(context: context) }
    }

    @Test func callsSpreadOverEveryReplicaAndGoOnWhenOneStops() async throws {
        let context = ZMQContext()
        defer { context.shutdown() }
        let hosts = try Self.hosts(context, count: 2)
        let endpoints = hosts.map { $0.boundEndpoints.withLock { $0.rpc } }
        let client = try RPCClient(
            service: "test", endpoint: endpoints.joined(separator: ", "), context: context,
            logger: Logger(service: "test", minimum: .error), defaultTimeoutMs: 20_000)
        defer { client.shutdown() }
        #expect(client.replicas == endpoints)
        try await eventually("both replicas connected", intervalMs: 0) {
            _ = try? await client.call(TestRPC.Echo.self, .init(text: "warm-up"), timeoutMs: 500)
            return client.connectedReplicas == 2
        }
        for i in 0..<20 { #expect(try await client.call(TestRPC.Echo.self, .init(text: "\(i)")).text == "\(i)") }
        let served = hosts.map { $0.counterSnapshot()["requests.test.echo"] ?? 0 }
        #expect(served.allSatisfy { $0 >= 5 }, "calls are spread: \(served)")

        // One replica stops: calls go to the other, none fails.
        hosts[0].stop()
        await hosts[0].run()
        for i in 0..<20 { #expect(try await client.call(TestRPC.Echo.self, .init(text: "\(i)")).text == "\(i)") }
        hosts[1].stop()
        await hosts[1].run()
        // None left: a fast 503, not a wait for the deadline.
        await #expect(throws: ServiceError.self) { try await client.call(TestRPC.Echo.self, .init(text: "x")) }
    }

    @Test func aCallHeldByAStoppingReplicaFailsWith503AndTheNextGoesToTheOther() async throws {
        let context = ZMQContext()
        defer { context.shutdown() }
        let hosts = try Self.hosts(context, count: 2)
        let client = try RPCClient(
            service: "test", endpoint: hosts.map { $0.boundEndpoints.withLock { $0.rpc } }.joined(separator: ","),
            context: context, logger: Logger(service: "test", minimum: .error), defaultTimeoutMs: 20_000)
        defer { client.shutdown() }
        try await eventually("both replicas connected", intervalMs: 0) {
            _ = try? await client.call(TestRPC.Echo.self, .init(text: "warm-up"), timeoutMs: 500)
            return client.connectedReplicas == 2
        }
        // A gated (non-idempotent) call is held by one replica, which then stops: the call fails
        // 503 (it may have been applied: never sent again), and the next calls go to the other.
        // (SIGKILL of a replica, where the connection drops under the call, is in the gateway's
        // ReplicaTests.)
        let gate = "replica-\(RandomID.make())"
        let gated = Task { try await client.call(TestRPC.Gated.self, .init(gate: gate)) }
        while hosts.allSatisfy({ ($0.counterSnapshot()["requests.test.gated"] ?? 0) == 0 }) {
            try await Task.sleep(for: .milliseconds(5))
        }
        let holder = hosts.firstIndex { ($0.counterSnapshot()["requests.test.gated"] ?? 0) > 0 }!
        hosts[holder].stop()
        await hosts[holder].run()
        Gates.shared.open(gate)
        await #expect {
            try await gated.value
        } throws: { error in
            (error as? ServiceError)?.status == 503
        }
        #expect(try await client.call(TestRPC.Echo.self, .init(text: "after")).text == "after")
        // A call marked idempotent (a write with an idempotency key) reaches the other replica.
        let again = "replica-\(RandomID.make())"
        let retried = Task { try await client.call(TestRPC.Gated.self, .init(gate: again), idempotent: true) }
        let other = 1 - holder
        while (hosts[other].counterSnapshot()["requests.test.gated"] ?? 0) == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        Gates.shared.open(again)
        _ = try await retried.value
    }

    @Test func aDoorbellRungBeforeTheWaitIsKeptAndSurvivesACancelledWaiter() async throws {
        let bell = Doorbell()
        bell.ring()
        bell.ring()
        await bell.wait()  // returns at once: the rings merged into one
        let cancelled = Task { await bell.wait() }
        cancelled.cancel()
        await cancelled.value
        let waiter = Task { await bell.wait() }
        bell.ring()
        await waiter.value
        let start = Timestamp.nowMs()
        await bell.wait(timeoutMs: 20)
        #expect(Timestamp.nowMs() - start >= 20)
    }

    @Test func theCursorMovesOnlyFromWhereTheApplierExpectsIt() async throws {
        let database = try Database(
            location: try TestStorage.location(NSTemporaryDirectory(), "cursor-\(RandomID.make())"), producer: nil,
            migrations: [])
        try await database.write { tx in try tx.setCursor(5, for: "p", expected: 0) }
        try await database.write { tx in try tx.setCursor(7, for: "p", expected: 5) }
        // A second applier that still believes the cursor is at 5 is turned away, and what it
        // applied in that transaction rolls back with it.
        await #expect(throws: CursorMoved.self) {
            try await database.write { tx in try tx.setCursor(6, for: "p", expected: 5) }
        }
        #expect(try await database.cursor(for: "p") == 7)
    }
}
