import CSQLite
import Foundation
import Testing

@testable import Storage
@testable import Wire

struct SQLiteTests {
    func temporaryPath() -> String { NSTemporaryDirectory() + "sqlite-\(RandomID.make()).sqlite" }

    @Test func migrationsRunOnceEachByName() throws {
        let path = temporaryPath()
        let migrations = [Migration("a.1", "CREATE TABLE a(x INTEGER)"), Migration("a.2", "ALTER TABLE a ADD COLUMN y TEXT")]
        do {
            let c = try SQLiteConnection(path: path)
            try Migrator.migrate(DatabaseConnection(c), migrations)
            try c.query("INSERT INTO a(x, y) VALUES (\(1), \("one"))")
        }
        let c = try SQLiteConnection(path: path)
        try Migrator.migrate(DatabaseConnection(c), migrations + [Migration("a.3", "CREATE INDEX a_x ON a(x)")])
        #expect(try c.query("SELECT id FROM schema_migrations ORDER BY id").map { try $0.string("id") } == ["a.1", "a.2", "a.3"])
        #expect(try c.queryOne("SELECT y FROM a WHERE x = \(1)")?.string("y") == "one")
        #expect(try c.queryOne("PRAGMA journal_mode")?.string("journal_mode") == "wal")
    }

    /// Commits leave up to `walAutocheckpointFrames` frames in the WAL before one checkpoints
    /// (SQLite's default checkpoints at 1,000), and temporary storage stays in memory.
    @Test func theWALGrowsToItsCheckpointSizeBeforeACommitCheckpoints() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        try c.execute("CREATE TABLE a(x INTEGER PRIMARY KEY, y BLOB)")
        // 1,500 commits of a page-sized row: at least 1,500 frames.
        for i in 0..<1_500 { try c.query("INSERT INTO a(x, y) VALUES (\(i), zeroblob(4000))") }
        // wal_checkpoint's second column: the frames in the WAL before this checkpoint.
        let frames = try c.queryOne("PRAGMA wal_checkpoint(PASSIVE)")?.int64("log") ?? 0
        #expect(frames >= 1_500, "\(frames) frames: a commit checkpointed before the configured size")
        #expect(try c.scalar("PRAGMA wal_autocheckpoint") == Int64(SQLiteConnection.walAutocheckpointFrames))
        #expect(try c.scalar("PRAGMA temp_store") == 2)  // MEMORY
    }

    /// A database from before named migrations counted them in `user_version`: those are
    /// recorded as applied, not run again, and the newer ones run.
    @Test func aUserVersionDatabaseKeepsItsMigrations() throws {
        let path = temporaryPath()
        do {
            let c = try SQLiteConnection(path: path)
            try c.execute("CREATE TABLE a(x INTEGER); PRAGMA user_version = 1")
        }
        let legacy = [Migration("a.1", "CREATE TABLE a(x INTEGER)")]
        let c = try SQLiteConnection(path: path)
        try Migrator.migrate(
            DatabaseConnection(c), legacy + [Migration("a.2", "ALTER TABLE a ADD COLUMN y TEXT")], legacy: legacy)
        try c.query("INSERT INTO a(x, y) VALUES (1, 'y')")
        #expect(try c.scalar("SELECT COUNT(*) FROM schema_migrations") == 2)
    }

    /// The same id twice is refused before anything runs.
    @Test func aDuplicateMigrationIdIsRefused() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        let twice = [
            Migration("a.1", "CREATE TABLE a(x INTEGER)"), Migration("a.2", "CREATE TABLE b(x INTEGER)"),
            Migration("a.1", "CREATE TABLE c(x INTEGER)"),
        ]
        #expect(throws: MigrationError.duplicateId("a.1")) { try Migrator.migrate(DatabaseConnection(c), twice) }
        #expect(try !c.exists("SELECT 1 FROM sqlite_master WHERE name = 'a'"))
        #expect(throws: Never.self) { try Migrator.validate(Array(twice.prefix(2))) }
    }

    /// A database a newer build migrated (it records a migration this code does not list) is
    /// refused, named, and left as it was.
    @Test func aMigrationFromANewerBuildIsReported() throws {
        let path = temporaryPath()
        let old = [Migration("a.1", "CREATE TABLE a(x INTEGER)")]
        do {
            let c = try SQLiteConnection(path: path)
            try Migrator.migrate(
                DatabaseConnection(c), old + [Migration("a.2", "CREATE TABLE b(x INTEGER)"), Migration("a.3", "SELECT 1")])
        }
        let c = try SQLiteConnection(path: path)
        #expect(throws: MigrationError.unknownApplied(["a.2", "a.3"])) {
            try Migrator.migrate(DatabaseConnection(c), old + [Migration("a.4", "CREATE TABLE d(x INTEGER)")])
        }
        #expect(try !c.exists("SELECT 1 FROM sqlite_master WHERE name = 'd'"))
    }

    /// The named result codes are SQLite's own numbers (sqlite3.h), primary and extended.
    @Test func resultCodesAreSQLitesConstants() {
        let pinned: [(SQLiteResultCode, Int32)] = [
            (.ok, SQLITE_OK), (.error, SQLITE_ERROR), (.internal, SQLITE_INTERNAL), (.perm, SQLITE_PERM),
            (.abort, SQLITE_ABORT), (.busy, SQLITE_BUSY), (.locked, SQLITE_LOCKED), (.noMemory, SQLITE_NOMEM),
            (.readOnly, SQLITE_READONLY), (.interrupt, SQLITE_INTERRUPT), (.ioError, SQLITE_IOERR),
            (.corrupt, SQLITE_CORRUPT), (.full, SQLITE_FULL), (.cantOpen, SQLITE_CANTOPEN), (.schema, SQLITE_SCHEMA),
            (.tooBig, SQLITE_TOOBIG), (.constraint, SQLITE_CONSTRAINT), (.mismatch, SQLITE_MISMATCH),
            (.misuse, SQLITE_MISUSE), (.range, SQLITE_RANGE), (.row, SQLITE_ROW), (.done, SQLITE_DONE),
            (.busySnapshot, CSQLITE_BUSY_SNAPSHOT), (.constraintCheck, CSQLITE_CONSTRAINT_CHECK),
            (.constraintForeignKey, CSQLITE_CONSTRAINT_FOREIGNKEY), (.constraintNotNull, CSQLITE_CONSTRAINT_NOTNULL),
            (.constraintPrimaryKey, CSQLITE_CONSTRAINT_PRIMARYKEY), (.constraintUnique, CSQLITE_CONSTRAINT_UNIQUE),
        ]
        for (code, constant) in pinned { #expect(code.rawValue == constant, "\(code)") }
        #expect(SQLiteResultCode.constraintUnique.primary == .constraint)
        #expect(SQLiteResultCode.busySnapshot.primary == .busy)
    }

    /// A PRIMARY KEY violation is named as one (and is a unique violation).
    @Test func aPrimaryKeyViolationIsNamed() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        try c.execute("CREATE TABLE k(id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        try c.query("INSERT INTO k(id, v) VALUES (1, 'a')")
        #expect {
            try c.query("INSERT INTO k(id, v) VALUES (1, 'b')")
        } throws: {
            ($0 as? DatabaseError)?.resultCode == .constraintPrimaryKey && ($0 as? DatabaseError)?.kind == .uniqueViolation
        }
        #expect {
            try c.query("INSERT INTO k(id, v) VALUES (2, NULL)")
        } throws: { ($0 as? DatabaseError)?.resultCode == .constraintNotNull && ($0 as? DatabaseError)?.kind == .other }
    }

    @Test func rowsAreReadByNameAndNullIsNeverAValue() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        try c.execute("CREATE TABLE t(a TEXT, b INTEGER)")
        try c.query("INSERT INTO t(a, b) VALUES (NULL, NULL)")
        let row = try #require(try c.queryOne("SELECT a, b AS count FROM t"))
        #expect(try row.optionalString("a") == nil)
        #expect(try row.optionalInt64("count") == nil)
        #expect(throws: RowError.self) { try row.string("a") }
        #expect(throws: RowError.self) { try row.int64("count") }
        #expect(throws: RowError.self) { try row.int64("b") }  // renamed by AS: no such column
        try c.query("UPDATE t SET a = 'x', b = 7")
        let filled = try #require(try c.queryOne("SELECT a, b FROM t"))
        #expect(try filled.string("a") == "x" && filled.int64("b") == 7)
        #expect(throws: RowError.self) { try filled.int64("a") }  // TEXT is not an integer
    }

    /// `queryOne`, `scalar` and `exists` stop at the first row: the second row of this
    /// statement fails (an integer overflow in `abs`), so reading it at all would throw.
    @Test func firstRowReadsStopAtTheFirstRow() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        let sql: SQL =
            "SELECT CASE WHEN x = 1 THEN 7 ELSE abs(-9223372036854775807 - 1) END AS v FROM (SELECT 1 AS x UNION ALL SELECT 2)"
        #expect(try c.exists(sql))
        #expect(try c.scalar(sql) == 7)
        #expect(try c.queryOne(sql)?.int64("v") == 7)
        #expect(throws: DatabaseError.self) { try c.query(sql) }
    }

    @Test func errorsKeepCodeMessageAndSQL() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        try c.execute("CREATE TABLE u(name TEXT UNIQUE)")
        try c.query("INSERT INTO u(name) VALUES (\("a"))")
        #expect {
            try c.query("INSERT INTO u(name) VALUES (\("a"))")
        } throws: { error in
            guard let e = error as? DatabaseError else { return false }
            return e.kind == .uniqueViolation && e.engine == .sqlite && e.sql == "INSERT INTO u(name) VALUES (?1)"
                && e.message.contains("UNIQUE")
        }
        #expect(throws: DatabaseError.self) { try c.query("SELECT nope FROM u") }
    }

    @Test func textWithNULAndNonASCIIRoundTrips() throws {
        let c = try SQLiteConnection(path: temporaryPath())
        try c.execute("CREATE TABLE t(v TEXT)")
        let value = "a\u{0}b \u{202E}é😀"
        try c.query("INSERT INTO t(v) VALUES (\(value))")
        #expect(try c.queryOne("SELECT v FROM t")?.string("v") == value)
        #expect(try c.scalar("SELECT length(CAST(v AS BLOB)) FROM t") == Int64(value.utf8.count))
    }
}
