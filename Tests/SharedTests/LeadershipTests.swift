import Foundation
import Harness
import TestSupport
import Testing

@testable import BackendKit
@testable import ServiceKit
@testable import Support
@testable import Wire

/// The election of the active replica on PostgreSQL (`Leadership`, `LeaderOnly`), with real
/// sessions on the test server. Runs in the PostgreSQL pass of `scripts/test`.
@Suite(.serialized, .enabled(if: TestStorage.engine == .postgres, "the election needs PostgreSQL"))
struct LeadershipTests {
    /// Waits until `condition` holds (polled), or throws `TimedOut` after `timeoutMs`.
    static func until(_ what: String, timeoutMs: Int64 = 30_000, _ condition: () -> Bool) async throws {
        try await eventually(what, within: Double(timeoutMs) / 1000, intervalMs: 10) { condition() }
    }

    @Test func oneReplicaIsActiveAndAnotherTakesOverWhenItStops() async throws {
        let url = try TestPostgres.shared().makeDatabase()
        let logger = Logger(service: "test", minimum: .error)
        let a = Leadership(location: .postgres(url: url), logger: logger, retryMs: 50)
        let b = Leadership(location: .postgres(url: url), logger: logger, retryMs: 50)
        let ran = Locked<[String]>([])
        let gatedB = LeaderOnly(
            leadership: b,
            services: [
                (
                    "job",
                    ServiceClosure {
                        ran.withLock { $0.append("b") }
                        while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(10)) }
                    }
                )
            ], logger: logger)
        let taskA = Task { await a.run() }
        try await Self.until("a to be active") { a.isActive }
        let taskB = Task { await b.run() }
        let taskGated = Task { await gatedB.run() }
        defer {
            taskB.cancel()
            taskGated.cancel()
        }
        // b competes for a while (its attempts every 50 ms fail) and stays standing by.
        try await Task.sleep(for: .milliseconds(300))
        #expect(a.isActive && !b.isActive)
        #expect(ran.get().isEmpty)
        // a stops: its session ends, the lock is released, b takes over and runs its job.
        taskA.cancel()
        await taskA.value
        #expect(!a.isActive)
        try await Self.until("b to be active") { b.isActive }
        try await Self.until("b's job to run") { ran.get() == ["b"] }
        // The server ends b's session (as a failover or an administrator would): b stands down
        // at once, and wins the lock again on a new session.
        try TestPostgres.shared().terminateSessions(of: url)
        try await Self.until("b to stand down") { b.counters()["leadership.changes"] ?? 0 >= 2 }
        try await Self.until("b to be active again") { b.isActive }
        try await Self.until("b's job to run again") { ran.get() == ["b", "b"] }
    }
}
