import Foundation
import Harness
import TestSupport
import Testing

@testable import Storage
@testable import Wire

/// `DatabaseError`: real violations on the engine of the pass (`TEST_STORAGE_ENGINE`) name their
/// constraint by PostgreSQL's names on both engines; the service host maps kinds to replies.
struct DatabaseErrorTests {
    static let schema = Migration(
        "t",
        """
        CREATE TABLE accounts(id TEXT PRIMARY KEY, email TEXT UNIQUE, login TEXT NOT NULL);
        CREATE UNIQUE INDEX accounts_by_login ON accounts(login);
        CREATE TABLE marks(recipient \(SQL.bigint) NOT NULL, seq \(SQL.bigint) NOT NULL, PRIMARY KEY(recipient, seq));
        """)

    func database() throws -> Database {
        try Database(
            location: try TestStorage.location(NSTemporaryDirectory(), "errors-\(RandomID.make())"), producer: nil,
            migrations: [Self.schema])
    }

    /// The error `sql` throws in a write, or nil when it throws none (or another type).
    func failure(_ db: Database, _ sql: SQL) async -> DatabaseError? {
        do {
            _ = try await db.write { tx in try tx.query(sql) }
            return nil
        } catch {
            return error as? DatabaseError
        }
    }

    @Test func aUniqueViolationNamesItsConstraintOnEitherEngine() async throws {
        let db = try database()
        try await db.write { tx in
            try tx.query("INSERT INTO accounts(id, email, login) VALUES (\("a"), \("a@x"), \("alice"))")
            try tx.query("INSERT INTO marks(recipient, seq) VALUES (\(Int64(1)), \(Int64(1)))")
        }
        let cases: [(SQL, String)] = [
            ("INSERT INTO accounts(id, email, login) VALUES (\("a"), \("b@x"), \("bob"))", "accounts_pkey"),
            ("INSERT INTO accounts(id, email, login) VALUES (\("b"), \("a@x"), \("bob"))", "accounts_email_key"),
            ("INSERT INTO accounts(id, email, login) VALUES (\("b"), \("b@x"), \("alice"))", "accounts_by_login"),
            ("INSERT INTO marks(recipient, seq) VALUES (\(Int64(1)), \(Int64(1)))", "marks_pkey"),
        ]
        for (sql, constraint) in cases {
            let error = await failure(db, sql)
            #expect(error?.kind == .uniqueViolation, "\(String(describing: error))")
            #expect(error?.constraint == constraint, "\(String(describing: error))")
            #expect(error?.engine == TestStorage.engine && error?.sql == sql.text(for: TestStorage.engine))
            #expect(error?.serviceError == nil)  // a store's business: 500 if it lets it through
        }
        // The connection goes on, and nothing of the failed writes is there.
        #expect(try await db.read { try $0.scalar("SELECT COUNT(*) FROM accounts") } == 1)
    }

    @Test func otherConstraintsAreOtherWithoutAName() async throws {
        let db = try database()
        let error = await failure(db, "INSERT INTO accounts(id, email, login) VALUES (\("c"), \("c@x"), \(SQLValue.null))")
        #expect(error?.kind == .other && error?.constraint == nil)
        let syntax = await failure(db, "SELEC 1")
        #expect(syntax?.kind == .other && syntax?.sql == "SELEC 1")
    }

    /// SQLite's lock wait that gave up is `busy` (not mapped to a reply: 500).
    @Test func aLockedSQLiteDatabaseIsBusy() throws {
        let path = NSTemporaryDirectory() + "busy-\(RandomID.make()).sqlite"
        let holder = try SQLiteConnection(path: path)
        let waiter = try SQLiteConnection(path: path, busyTimeoutMs: 1)
        try holder.execute("BEGIN IMMEDIATE")
        let error = try #require(throws: DatabaseError.self) { try waiter.execute("BEGIN IMMEDIATE") }
        #expect(error.kind == .busy && error.resultCode?.primary == .busy && error.engine == .sqlite)
        #expect(error.serviceError == nil)
        try holder.execute("ROLLBACK")
    }

    /// PostgreSQL's SQLSTATEs and a dead connection, by kind.
    @Test func sqlStatesMapToKinds() {
        let kinds: [(String?, Bool, DatabaseError.Kind)] = [
            ("23505", false, .uniqueViolation), ("40001", false, .serializationFailure), ("40P01", false, .deadlock),
            ("57014", false, .timeout), ("55P03", false, .busy), ("22021", false, .invalidText),
            ("57P01", false, .connectionLost), ("08006", false, .connectionLost), (nil, true, .connectionLost),
            (nil, false, .other), ("42601", false, .other), ("42601", true, .connectionLost),
        ]
        for (state, dead, kind) in kinds {
            #expect(PostgresConnection.kind(sqlState: state, connectionDead: dead) == kind, "\(state ?? "nil")")
        }
        #expect(DatabaseError(kind: .deadlock, engine: .postgres, message: "").isTransient)
        #expect(DatabaseError(kind: .serializationFailure, engine: .postgres, message: "").isTransient)
        #expect(!DatabaseError(kind: .uniqueViolation, engine: .postgres, message: "").isTransient)
    }

    /// The service host's replies: the storage layer names the kind, the host the status.
    @Test func theHostMapsKindsToReplies() {
        func reply(_ kind: DatabaseError.Kind) -> ServiceError? {
            DatabaseError(kind: kind, engine: .postgres, message: "engine text that never reaches a client").serviceError
        }
        #expect(
            reply(.connectionLost)
                == ServiceError(
                    code: "service_unavailable", message: "the database is unavailable", status: 503, retryAfter: 1))
        #expect(
            reply(.timeout) == ServiceError(code: "deadline_exceeded", message: "deadline passed in the database", status: 504))
        #expect(reply(.invalidText)?.status == 400 && reply(.invalidText)?.code == "invalid_field")
        for kind in [DatabaseError.Kind.uniqueViolation, .deadlock, .serializationFailure, .busy, .other] {
            #expect(reply(kind) == nil, "\(kind)")
        }
        #expect(WriteDeadlinePassed().serviceError?.status == 504)
    }
}
