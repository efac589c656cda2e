import Foundation
import Harness
import TestSupport
import Testing

@testable import Storage
@testable import Support
@testable import Wire

/// `Database`: transactions, group commit and deadlines, on the engine of the pass
/// (`TEST_STORAGE_ENGINE`: SQLite, or PostgreSQL in `scripts/test`'s PostgreSQL pass).
struct DatabaseTests {
    func location() throws -> DatabaseLocation {
        try TestStorage.location(NSTemporaryDirectory(), "db-\(RandomID.make())")
    }

    @Test func transactionsRollBackOnThrow() async throws {
        let db = try Database(location: try location(), producer: "x", migrations: [Migration("t", "CREATE TABLE t(v INTEGER)")])
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await db.write { tx in
                try tx.query("INSERT INTO t(v) VALUES (1)")
                try tx.emit(TestRPC.Happened(n: 1))
                throw Boom()
            }
        }
        let (rows, outbox) = try await db.read { c in
            (try c.scalar("SELECT COUNT(*) FROM t"), try c.scalar("SELECT COUNT(*) FROM outbox"))
        }
        #expect(rows == 0 && outbox == 0)  // the state change and its event go together or not at all
    }

    /// Writes that queue behind a running transaction share the next commit; each runs in its
    /// own savepoint, so a failing one rolls back alone and the others (and their events) land.
    @Test func queuedWritesShareOneCommitAndAFailureRollsBackOnlyItself() async throws {
        let db = try Database(location: try location(), producer: "x", migrations: [Migration("t", "CREATE TABLE t(v INTEGER)")])
        let published = Locked<[Int64]>([])
        db.setPublisher { events in published.withLock { $0 += events.map(\.seq) } }
        struct Boom: Error {}
        // Hold the writer until every write below is queued.
        let holding = Locked(false)
        let release = DispatchSemaphore(value: 0)
        let hold = Task {
            try await db.write { _ in
                holding.withLock { $0 = true }
                release.wait()
            }
        }
        while !holding.withLock({ $0 }) { await Task.yield() }
        let before = db.counters()
        let writes = Task {
            await withTaskGroup(of: (Int, Bool).self) { group in
                for v in 1...100 {
                    group.addTask {
                        do {
                            try await db.write { tx in
                                try tx.query("INSERT INTO t(v) VALUES (\(v))")
                                try tx.emit(TestRPC.Happened(n: v))
                                if v == 50 { throw Boom() }
                            }
                            return (v, true)
                        } catch {
                            return (v, false)
                        }
                    }
                }
                var outcomes: [Int: Bool] = [:]
                for await (v, ok) in group { outcomes[v] = ok }
                return outcomes
            }
        }
        while db.pendingWrites < 100 { await Task.yield() }
        release.signal()
        try await hold.value
        let outcomes = await writes.value
        #expect(outcomes.filter { !$0.value }.map(\.key) == [50])
        let after = db.counters()
        // Two commits: the holding write's, then all 100 queued writes together (99 applied).
        #expect(after["db.commits"]! - before["db.commits"]! == 2)
        #expect(after["db.writes"]! - before["db.writes"]! == 1 + 99)
        let (values, seqs) = try await db.read { c in
            (
                try c.query("SELECT v FROM t ORDER BY v").map { try $0.int64("v") },
                try c.query("SELECT seq FROM outbox ORDER BY seq").map { try $0.int64("seq") }
            )
        }
        #expect(values == (1...100).filter { $0 != 50 }.map(Int64.init))
        // The failed write's event went with it; sequence numbers stay contiguous.
        #expect(seqs == Array(1...99))
        #expect(published.withLock { $0 } == Array(1...99))
    }

    /// A write whose request deadline passed while it waited behind another is skipped (504
    /// `deadline_exceeded`), not applied late for a caller that has given up.
    @Test func aWriteWhoseDeadlinePassedWhileQueuedIsSkipped() async throws {
        let db = try Database(location: try location(), producer: "x", migrations: [Migration("t", "CREATE TABLE t(v INTEGER)")])
        let holding = Locked(false)
        let release = DispatchSemaphore(value: 0)
        let hold = Task {
            try await db.write { _ in
                holding.withLock { $0 = true }
                release.wait()
            }
        }
        while !holding.withLock({ $0 }) { await Task.yield() }
        let deadline = Timestamp.nowMs() + 20
        let late = Task {
            try await RequestDeadline.$current.withValue(deadline) {
                try await db.write { tx in
                    try tx.query("INSERT INTO t(v) VALUES (1)")
                    try tx.emit(TestRPC.Happened(n: 1))
                }
            }
        }
        while db.pendingWrites < 1 { await Task.yield() }
        // The condition is the deadline having passed: wait for the clock, then free the writer.
        while Timestamp.nowMs() <= deadline { try await Task.sleep(for: .milliseconds(5)) }
        release.signal()
        try await hold.value
        let error = await #expect(throws: WriteDeadlinePassed.self) { try await late.value }
        #expect(
            error?.serviceError
                == ServiceError(code: "deadline_exceeded", message: "deadline passed while waiting for the database", status: 504)
        )
        #expect(try await db.read { try $0.scalar("SELECT COUNT(*) FROM t") } == 0)
        #expect(try await db.outbox(after: 0, limit: 0).head == 0)
    }
}
