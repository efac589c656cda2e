import Foundation
import Testing

@testable import Shared

struct SQLiteTests {
    func temporaryPath() -> String { NSTemporaryDirectory() + "sqlite-\(RandomID.make()).sqlite" }

    @Test func migrationsRunOnceByUserVersion() throws {
        let path = temporaryPath()
        let migrations = ["CREATE TABLE a(x INTEGER)", "ALTER TABLE a ADD COLUMN y TEXT"]
        do {
            let c = try SQLiteConnection(path: path)
            try c.migrate(migrations)
            try c.query("INSERT INTO a(x, y) VALUES (?, ?)", [1, "one"])
        }
        let c = try SQLiteConnection(path: path)
        try c.migrate(migrations + ["CREATE INDEX a_x ON a(x)"])
        #expect(try c.queryOne("PRAGMA user_version")?.int(0) == 3)
        #expect(try c.queryOne("SELECT y FROM a WHERE x = ?", [1])?.string(0) == "one")
        #expect(try c.queryOne("PRAGMA journal_mode")?.string(0) == "wal")
    }

    @Test func errorsKeepCodeMessageAndSQL() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        try c.execute("CREATE TABLE u(name TEXT UNIQUE)")
        try c.query("INSERT INTO u(name) VALUES (?)", ["a"])
        #expect {
            try c.query("INSERT INTO u(name) VALUES (?)", ["a"])
        } throws: { error in
            guard let e = error as? SQLiteError else { return false }
            return e.isUniqueViolation && e.sql == "INSERT INTO u(name) VALUES (?)" && e.message.contains("UNIQUE")
        }
        #expect(throws: SQLiteError.self) { try c.query("SELECT nope FROM u") }
    }

    @Test func textWithNULAndNonASCIIRoundTrips() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        try c.execute("CREATE TABLE t(v TEXT)")
        let value = "a\u{0}b \u{202E}é😀"
        try c.query("INSERT INTO t(v) VALUES (?)", [value])
        #expect(try c.queryOne("SELECT v FROM t")?.string(0) == value)
        #expect(try c.queryOne("SELECT length(CAST(v AS BLOB)) FROM t")?.int(0) == Int64(value.utf8.count))
    }

    @Test func transactionsRollBackOnThrow() async throws {
        let db = try Database(path: temporaryPath(), producer: "x", migrations: ["CREATE TABLE t(v INTEGER)"])
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            try await db.write { tx in
                try tx.query("INSERT INTO t(v) VALUES (1)")
                try tx.emit(TestRPC.Happened(n: 1))
                throw Boom()
            }
        }
        let (rows, outbox) = try await db.read { c in
            (try c.queryOne("SELECT COUNT(*) FROM t")?.int(0), try c.queryOne("SELECT COUNT(*) FROM outbox")?.int(0))
        }
        #expect(rows == 0 && outbox == 0)  // the state change and its event go together or not at all
    }

    /// Writes that queue behind a running transaction share the next commit; each runs in its
    /// own savepoint, so a failing one rolls back alone and the others (and their events) land.
    @Test func queuedWritesShareOneCommitAndAFailureRollsBackOnlyItself() async throws {
        let db = try Database(path: temporaryPath(), producer: "x", migrations: ["CREATE TABLE t(v INTEGER)"])
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
                                try tx.query("INSERT INTO t(v) VALUES (?)", [v])
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
                try c.query("SELECT v FROM t ORDER BY v").map { $0.int(0) },
                try c.query("SELECT seq FROM outbox ORDER BY seq").map { $0.int(0) }
            )
        }
        #expect(values == (1...100).filter { $0 != 50 }.map(Int64.init))
        // The failed write's event went with it; sequence numbers stay contiguous.
        #expect(seqs == Array(1...99))
        #expect(published.withLock { $0 } == Array(1...99))
    }
}
