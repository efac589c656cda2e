import Foundation
import Harness
import TestSupport
import Testing

@testable import Storage
@testable import Wire

/// `SQL`: what an interpolation adds, and each engine's rendering. The round trips run on the
/// engine of the pass (`TEST_STORAGE_ENGINE`).
struct SQLTests {
    @Test func valuesBecomeParametersNumberedInOrderOnEachEngine() {
        let recipient: Int64 = 7
        let name = "alice"
        let sql: SQL = "SELECT seq FROM n WHERE recipient = \(recipient) AND name = \(name) LIMIT \(20)"
        #expect(sql.text(for: .sqlite) == "SELECT seq FROM n WHERE recipient = ?1 AND name = ?2 LIMIT ?3")
        #expect(sql.text(for: .postgres) == "SELECT seq FROM n WHERE recipient = $1 AND name = $2 LIMIT $3")
        #expect(sql.binds == [.int(7), .text("alice"), .int(20)])
    }

    /// A string interpolated by mistake is a value: its text never reaches the statement.
    @Test func anInterpolatedStringIsAlwaysAValueNeverText() {
        let evil = "x'; DROP TABLE users; --"
        let sql: SQL = "SELECT 1 FROM users WHERE name = \(evil)"
        #expect(sql.text(for: .sqlite) == "SELECT 1 FROM users WHERE name = ?1")
        #expect(sql.text(for: .postgres) == "SELECT 1 FROM users WHERE name = $1")
        #expect(sql.binds == [.text(evil)])
    }

    @Test func nilBindsNullOfEveryOptionalType() {
        let detail: String? = nil
        let post: Int64? = nil
        let count: Int? = 3
        let sql: SQL = "INSERT INTO t(a, b, c, d) VALUES (\(detail), \(post), \(count), \(SQLValue.null))"
        #expect(sql.binds == [.null, .null, .int(3), .null])
        #expect(sql.text(for: .sqlite) == "INSERT INTO t(a, b, c, d) VALUES (?1, ?2, ?3, ?4)")
    }

    @Test func everyBindableTypeBindsItsValue() {
        let blob = SQLValue.blob([0, 0xFF])
        let sql: SQL = "VALUES (\(1), \(Int64(-2)), \(true), \(false), \(2.5), \("t"), \(blob))"
        #expect(sql.binds == [.int(1), .int(-2), .int(1), .int(0), .double(2.5), .text("t"), .blob([0, 0xFF])])
    }

    /// A spliced fragment brings its parameters, numbered where they land.
    @Test func aFragmentIsSplicedWithItsParameters() {
        let condition: SQL = "a = \(1) AND b = \(2)"
        let sql: SQL = "SELECT \(0) FROM t WHERE \(condition) AND c = \(3)"
        #expect(sql.text(for: .sqlite) == "SELECT ?1 FROM t WHERE a = ?2 AND b = ?3 AND c = ?4")
        #expect(sql.text(for: .postgres) == "SELECT $1 FROM t WHERE a = $2 AND b = $3 AND c = $4")
        #expect(sql.binds == [.int(0), .int(1), .int(2), .int(3)])
    }

    @Test func aFragmentUsedTwiceBindsItsValuesTwice() {
        let key: SQL = "\(Int64(9))"
        let sql: SQL = "SELECT \(SQL.greatest)(\(key), \(key))"
        #expect(sql.text(for: .sqlite) == "SELECT MAX(?1, ?2)")
        #expect(sql.text(for: .postgres) == "SELECT GREATEST($1, $2)")
        #expect(sql.binds == [.int(9), .int(9)])
    }

    @Test func dialectFragmentsRenderEachEnginesSide() {
        let schema: SQL = "CREATE TABLE g(k \(SQL.bigint) PRIMARY KEY, v \(SQL.bigint))\(SQL.withoutRowid)"
        #expect(schema.text(for: .sqlite) == "CREATE TABLE g(k INTEGER PRIMARY KEY, v INTEGER) WITHOUT ROWID")
        #expect(schema.text(for: .postgres) == "CREATE TABLE g(k BIGINT PRIMARY KEY, v BIGINT)")
        #expect(schema.binds.isEmpty)
        let pick: SQL =
            "SELECT id FROM q \(SQL.indexedBy("q_by_round")) ORDER BY \(SQL.insertionOrder) LIMIT 1\(SQL.forUpdateSkipLocked)"
        #expect(pick.text(for: .sqlite) == "SELECT id FROM q INDEXED BY q_by_round ORDER BY rowid LIMIT 1")
        #expect(pick.text(for: .postgres) == "SELECT id FROM q  ORDER BY position LIMIT 1 FOR UPDATE SKIP LOCKED")
        #expect(SQL.least.text(for: .sqlite) == "MIN" && SQL.least.text(for: .postgres) == "LEAST")
        #expect(SQL.noLimit.text(for: .sqlite) == "LIMIT -1" && SQL.noLimit.text(for: .postgres) == "LIMIT ALL")
        let only = SQL.postgresOnly("SET LOCAL enable_seqscan = off")
        #expect(only.text(for: .sqlite) == "" && only.text(for: .postgres) == "SET LOCAL enable_seqscan = off")
    }

    @Test func aDialectFragmentKeepsTheParametersAroundIt() {
        let json = SQL.integers(inJSONArray: "[1,2]")
        let sql: SQL = "SELECT k.value, \(Int64(5)) FROM (\(json)) k WHERE k.value > \(0)"
        #expect(sql.text(for: .sqlite) == "SELECT k.value, ?1 FROM (SELECT value FROM json_each(?2)) k WHERE k.value > ?3")
        #expect(
            sql.text(for: .postgres)
                == "SELECT k.value, $1 FROM (SELECT value::bigint AS value FROM jsonb_array_elements_text($2::jsonb)) k"
                + " WHERE k.value > $3"
        )
        #expect(sql.binds == [.int(5), .text("[1,2]"), .int(0)])
    }

    @Test func listsLiteralsAndUnescapedText() {
        let ids: [Int64] = [4, 5, 6]
        let table = "likes"
        let sql: SQL = "DELETE FROM \(unescaped: table) WHERE type = \(literal: 5) AND id IN (\(list: ids))"
        #expect(sql.text(for: .sqlite) == "DELETE FROM likes WHERE type = 5 AND id IN (?1, ?2, ?3)")
        #expect(sql.text(for: .postgres) == "DELETE FROM likes WHERE type = 5 AND id IN ($1, $2, $3)")
        #expect(sql.binds == [.int(4), .int(5), .int(6)])
        let none: SQL = "IN (\(list: [Int64]()))"
        #expect(none.text(for: .sqlite) == "IN ()" && none.binds.isEmpty)
    }

    @Test func statementsJoinAndAddUp() {
        let rows = [(1, "a"), (2, "b")].map { n, s -> SQL in "(\(literal: n), \(s))" }
        let sql: SQL = "INSERT INTO t(n, s) VALUES " + rows.joined(separator: ", ") + " ON CONFLICT DO NOTHING"
        #expect(sql.text(for: .sqlite) == "INSERT INTO t(n, s) VALUES (1, ?1), (2, ?2) ON CONFLICT DO NOTHING")
        #expect(sql.text(for: .postgres) == "INSERT INTO t(n, s) VALUES (1, $1), (2, $2) ON CONFLICT DO NOTHING")
        #expect(sql.binds == [.text("a"), .text("b")])
    }

    /// A statement without values is its text on both engines, and `?` inside quotes or
    /// comments stays text.
    @Test func aStatementWithoutValuesIsItsOwnText() {
        let sql: SQL = "SELECT '?', \"a?\" FROM t -- why?"
        #expect(sql.text(for: .sqlite) == "SELECT '?', \"a?\" FROM t -- why?")
        #expect(sql.text(for: .postgres) == sql.text(for: .sqlite))
        #expect(sql.binds.isEmpty)
        #expect(SQL.isCleanLiteral("SELECT x FROM t WHERE a = '?' -- ?\n AND b = 1"))
        #expect(!SQL.isCleanLiteral("SELECT x FROM t WHERE a = ?"))
        #expect(!SQL.isCleanLiteral("SELECT \u{1}"))
    }

    /// The text an engine prepares, and the key its statement cache keeps, are the same for every
    /// call of one statement whatever its values.
    @Test func aStatementsTextIsTheSameWhateverItsValues() {
        func statement(_ recipient: Int64, _ name: String?) -> SQL {
            "SELECT \(SQL.greatest)(a, b) FROM t WHERE r = \(recipient) AND n = \(name)"
        }
        let one = statement(1, "a")
        let two = statement(2, nil)
        #expect(one.source == two.source)
        for engine in StorageEngine.allCases { #expect(one.text(for: engine) == two.text(for: engine)) }
        #expect(one.binds != two.binds)
    }

    /// Values round-trip through the engine of the pass, NULLs and the text of a "fragment"
    /// included.
    @Test func valuesRoundTripThroughTheEngine() async throws {
        let db = try Database(
            location: try TestStorage.location(NSTemporaryDirectory(), "sql-\(RandomID.make())"), producer: nil,
            migrations: [Migration("t", "CREATE TABLE t(k \(SQL.bigint), s TEXT, b \(SQL.bigint))")])
        let evil = "'); DROP TABLE t; --"
        let missing: Int64? = nil
        try await db.write { tx in
            try tx.query("INSERT INTO t(k, s, b) VALUES (\(Int64(1)), \(evil), \(missing))")
            try tx.query("INSERT INTO t(k, s, b) VALUES (\(Int64(2)), \("two"), \(SQL.greatest)(\(Int64(3)), \(Int64(4))))")
        }
        let rows = try await db.read { c in
            try c.query("SELECT k, s, b FROM t WHERE k IN (\(list: [Int64(1), 2])) ORDER BY k").map {
                [try $0.value("k"), try $0.value("s"), try $0.value("b")]
            }
        }
        #expect(rows == [[.int(1), .text(evil), .null], [.int(2), .text("two"), .int(4)]])
        // A statement for the other engine only runs nothing here.
        try await db.write { tx in try tx.connection.execute(.dialect(sqlite: "", postgres: "")) }
    }
}
