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
}
