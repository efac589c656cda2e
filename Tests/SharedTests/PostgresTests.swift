import Foundation
import Harness
import TestSupport
import Testing

@testable import Storage
@testable import Support
@testable import Wire

/// What the PostgreSQL engine sends, without a server.
@Suite struct PostgresPlaceholderTests {
    @Test func valuesBecomeNumberedParametersAndQuestionMarksInQuotesOrCommentsStayText() {
        let sql: SQL = "SELECT \(1), '?', \"a?\" -- is it?\nFROM t WHERE x = \("x") AND y = \(1)"
        #expect(sql.text(for: .postgres) == "SELECT $1, '?', \"a?\" -- is it?\nFROM t WHERE x = $2 AND y = $3")
        #expect(sql.binds == [.int(1), .text("x"), .int(1)])
    }

    @Test func aURLWithoutAConnectTimeoutGetsOne() {
        #expect(PostgresConnection.withConnectTimeout("postgres://u@h:1/db") == "postgres://u@h:1/db?connect_timeout=10")
        #expect(
            PostgresConnection.withConnectTimeout("postgresql://u@h/db?sslmode=require")
                == "postgresql://u@h/db?sslmode=require&connect_timeout=10")
        #expect(
            PostgresConnection.withConnectTimeout("postgres://u@h/db?connect_timeout=3") == "postgres://u@h/db?connect_timeout=3")
        #expect(PostgresConnection.withConnectTimeout("host=h dbname=d") == "host=h dbname=d connect_timeout=10")
    }
}

/// The PostgreSQL engine against a server the tests start (`TestPostgres`); run in the
/// PostgreSQL pass of `scripts/test` (`TEST_STORAGE_ENGINE=postgres`).
@Suite(.serialized, .enabled(if: TestStorage.engine == .postgres, "runs in the PostgreSQL pass"))
struct PostgresTests {
    func connection() throws -> PostgresConnection {
        try PostgresConnection(url: try TestPostgres.shared().makeDatabase())
    }

    @Test func valuesRoundTripByType() throws {
        let c = try connection()
        try c.execute("CREATE TABLE v(i BIGINT, small INTEGER, d DOUBLE PRECISION, t TEXT, b BYTEA, f BOOLEAN)")
        try c.query(
            """
            INSERT INTO v(i, small, d, t, b, f) VALUES (\(Int64.min), \(7), \(2.5), \("héllo ✓ '?' \u{1}"),
                \(SQLValue.blob([0, 1, 0xFF, 0x80])), true)
            """
        )
        try c.query("INSERT INTO v(i, t, b) VALUES (\(Int64.max), \(""), \(SQLValue.blob([])))")
        let rows = try c.query("SELECT i, small, d, t, b, f FROM v ORDER BY i")
        #expect(try rows[0].int64("i") == Int64.min && rows[0].int("small") == 7)
        #expect(try rows[0].value("d") == .double(2.5) && rows[0].string("t") == "héllo ✓ '?' \u{1}")
        #expect(try rows[0].blob("b") == [0, 1, 0xFF, 0x80] && rows[0].bool("f"))
        #expect(try rows[1].int64("i") == Int64.max && rows[1].string("t") == "" && rows[1].blob("b") == [])
        #expect(try rows[1].value("d") == .null && rows[1].optionalInt64("small") == nil)
        // SUM of a bigint is numeric: read as an integer when it is one.
        #expect(try c.scalar("SELECT SUM(small) FROM v") == 7)
        #expect(try c.exists("SELECT 1 FROM v WHERE i = \(Int64.max)"))
        #expect(try !c.exists("SELECT 1 FROM v WHERE i = \(0)"))
        try c.query("UPDATE v SET small = 1")
        #expect(c.changes == 2)
    }

    @Test func errorsKeepSQLStateMessageDetailAndStatement() throws {
        let c = try connection()
        try c.execute("CREATE TABLE u(k TEXT PRIMARY KEY)")
        try c.query("INSERT INTO u(k) VALUES (\("a"))")
        let error = try #require(throws: DatabaseError.self) { try c.query("INSERT INTO u(k) VALUES (\("a"))") }
        #expect(error.kind == .uniqueViolation && error.sqlState == "23505" && error.constraint == "u_pkey")
        #expect(error.detail?.contains("(k)=(a)") == true && error.sql == "INSERT INTO u(k) VALUES ($1)")
        #expect(error.serviceError == nil)
        let syntax = try #require(throws: DatabaseError.self) { try c.query("SELEC 1") }
        #expect(syntax.kind == .other && syntax.sqlState == "42601")
        // Text PostgreSQL cannot hold (U+0000; SQLite stores it) is a client's error, 400.
        let nul = try #require(throws: DatabaseError.self) { try c.query("SELECT 1 FROM u WHERE k = \("a\u{0}b")") }
        #expect(nul.kind == .invalidText && nul.serviceError?.status == 400 && nul.serviceError?.code == "invalid_field")
        // The connection goes on after an error.
        #expect(try c.scalar("SELECT COUNT(*) FROM u") == 1)
    }

    /// Statements with a varying number of parameters do not grow the cache without end.
    @Test func thePreparedStatementCacheIsBounded() throws {
        let c = try PostgresConnection(url: try TestPostgres.shared().makeDatabase(), maxStatements: 4)
        for n in 1...10 {
            #expect(
                try c.scalar("SELECT COUNT(*) FROM (VALUES (1), (2), (3)) AS v(x) WHERE x IN (\(list: Array(1...n)))")
                    == Int64(min(n, 3)))
            #expect(try c.scalar("SELECT COUNT(*) FROM pg_prepared_statements") ?? 99 <= 5)
        }
    }

    @Test func aRequestsDeadlineBecomesTheStatementTimeout() async throws {
        let database = try Database(
            location: .postgres(url: try TestPostgres.shared().makeDatabase()), producer: nil, migrations: [])
        let error = await #expect(throws: DatabaseError.self) {
            try await RequestDeadline.$current.withValue(Timestamp.nowMs() + 300) {
                try await database.read { try $0.query("SELECT pg_sleep(30)") }
            }
        }
        #expect(error?.kind == .timeout && error?.serviceError?.status == 504)
        // Outside a request there is no bound again.
        #expect(try await database.read { try $0.scalar("SELECT current_setting('statement_timeout') = '0'::text") } == 1)
    }

    /// Two writers on one database, as two replicas of a service would be, in the order that
    /// deadlocked when an event took its seq where it was emitted: B emits, then waits for a row
    /// A holds; A (holding the row) emits after that. Seqs are taken just before each commit,
    /// so A takes the head, commits and releases the row; B then takes the next seq. Nothing is
    /// visible before its commit, and the events are numbered in commit order, without a gap.
    @Test func outboxSequenceNumbersAreTakenAtCommitInCommitOrderWithoutDeadlock() async throws {
        let url = try TestPostgres.shared().makeDatabase()
        let migration = [Migration("t", "CREATE TABLE t(id BIGINT PRIMARY KEY, v BIGINT); INSERT INTO t VALUES (1, 0)")]
        let a = try Database(location: .postgres(url: url), producer: "test", migrations: migration)
        let b = try Database(location: .postgres(url: url), producer: "test", migrations: migration)
        let observer = try PostgresConnection(url: url)
        let aHoldsRow = DispatchSemaphore(value: 0)
        let bEmitted = DispatchSemaphore(value: 0)
        let releaseA = DispatchSemaphore(value: 0)

        async let aDone: Void = a.write { tx in
            try tx.query("UPDATE t SET v = v + 1 WHERE id = 1")
            aHoldsRow.signal()
            releaseA.wait()
            try tx.emit(TestRPC.Happened(n: 1))
        }
        await Task.detached { aHoldsRow.wait() }.value
        async let bDone: Void = b.write { tx in
            try tx.emit(TestRPC.Happened(n: 2))
            bEmitted.signal()
            try tx.query("UPDATE t SET v = v + 1 WHERE id = 1")  // waits for A's row lock
        }
        await Task.detached { bEmitted.wait() }.value
        // B waits for A's row (seen by the server, not guessed from time).
        while try observer.scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") != 1
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try observer.scalar("SELECT COUNT(*) FROM outbox") == 0)
        releaseA.signal()
        _ = try await (aDone, bDone)
        let outbox = try await a.outbox(after: 0, limit: 10)
        #expect(outbox.events.map(\.seq) == [1, 2] && outbox.head == 2)
        // A committed first, so its event is 1.
        #expect(outbox.events.map { String(decoding: $0.envelope, as: UTF8.self).contains(#""n":1"#) } == [true, false])
        #expect(try observer.scalar("SELECT v FROM t WHERE id = 1") == 2)
    }

    /// The server restarts under a database: a call while it is down fails at once with a
    /// lost connection (503), and the next calls after it is back reconnect on their own,
    /// including connections that sat idle through the restart.
    @Test func aRestartedServerIsReconnectedAndADownOneFailsFast() async throws {
        let server = try TestPostgres.start()
        let database = try Database(
            location: .postgres(url: try server.makeDatabase()), producer: "test",
            migrations: [Migration("t", "CREATE TABLE t(v BIGINT)")], readers: 2)
        _ = try await database.write { tx in try tx.query("INSERT INTO t(v) VALUES (1)") }
        try server.control(["-m", "immediate", "stop"])
        let down = await #expect(throws: DatabaseError.self) {
            try await database.write { tx in try tx.query("INSERT INTO t(v) VALUES (2)") }
        }
        #expect(down?.kind == .connectionLost && down?.serviceError?.status == 503)
        let downRead = await #expect(throws: DatabaseError.self) { try await database.read { try $0.scalar("SELECT 1") } }
        #expect(downRead?.kind == .connectionLost)
        try server.control(["-w", "start"])
        // Once the back-off has passed the write goes through (at most a few refusals before).
        var written = false
        for _ in 0..<200 where !written {
            do {
                _ = try await database.write { tx in try tx.query("INSERT INTO t(v) VALUES (3)") }
                written = true
            } catch let error as DatabaseError where error.kind == .connectionLost {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        #expect(written)
        // Both readers (one of them idle since before the restart) read what was committed.
        for _ in 0..<4 {
            var value: Int64?
            for _ in 0..<200 where value == nil {
                do { value = try await database.read { try $0.scalar("SELECT SUM(v) FROM t") } } catch let error
                    as DatabaseError where error.kind == .connectionLost
                {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            #expect(value == 4)
        }
    }
}
