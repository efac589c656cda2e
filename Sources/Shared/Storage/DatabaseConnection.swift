import Wire

/// The storage engine under a service's `Database`.
public enum StorageEngine: String, Sendable, CaseIterable, CustomStringConvertible {
    /// SQLite, embedded: one file per service under `DATA_DIR` (the default).
    case sqlite
    /// PostgreSQL 15 or later, through libpq: a database per service on a server.
    case postgres

    public var description: String { rawValue }
}

/// One connection to a service's database, on either engine: the only connection type stores,
/// event handlers and background jobs see. Not thread-safe: `Database` confines each connection
/// to one dispatch queue.
///
/// Statements are `SQL` values: values interpolated into them are bound, and each engine renders
/// its own placeholders and its side of the dialect fragments (`SQL+Dialect.swift`), so a store
/// writes a statement once. Errors are `DatabaseError`s on both engines.
public final class DatabaseConnection {
    enum Backing {
        case sqlite(SQLiteConnection)
        case postgres(PostgresConnection)
    }

    let backing: Backing

    /// The engine under this connection.
    public var engine: StorageEngine {
        switch backing {
        case .sqlite: .sqlite
        case .postgres: .postgres
        }
    }

    /// Wraps an open SQLite connection (tests and tools that open a file themselves).
    public init(_ connection: SQLiteConnection) { backing = .sqlite(connection) }

    /// Wraps an open PostgreSQL connection.
    public init(_ connection: PostgresConnection) { backing = .postgres(connection) }

    /// The SQLite connection underneath, for code in `Storage/` that needs SQLite itself
    /// (legacy migrations); nil on another engine.
    var sqlite: SQLiteConnection? {
        switch backing {
        case .sqlite(let c): c
        case .postgres: nil
        }
    }

    /// Runs one or more statements without parameters or results (schema, savepoints); nothing
    /// when `sql` has no text on this engine (`SQL.postgresOnly`).
    /// - Throws: `DatabaseError`.
    public func execute(_ sql: SQL) throws {
        switch backing {
        case .sqlite(let c): try c.execute(sql)
        case .postgres(let c): try c.execute(sql)
        }
    }

    /// Runs a statement with its bound values and returns all rows.
    /// - Throws: `DatabaseError` with the statement's text.
    @discardableResult
    public func query(_ sql: SQL) throws -> [Row] {
        switch backing {
        case .sqlite(let c): try c.query(sql)
        case .postgres(let c): try c.query(sql)
        }
    }

    /// The first row, or nil (reading stops at the first row).
    /// - Throws: `DatabaseError`.
    public func queryOne(_ sql: SQL) throws -> Row? {
        switch backing {
        case .sqlite(let c): try c.queryOne(sql)
        case .postgres(let c): try c.queryOne(sql)
        }
    }

    /// Every row decoded as `T`.
    /// - Throws: `DatabaseError`, or `RowError` from `T.init(row:)`.
    public func query<T: RowDecodable>(_ type: T.Type, _ sql: SQL) throws -> [T] {
        try query(sql).map(T.init(row:))
    }

    /// The first row decoded as `T`, or nil.
    /// - Throws: `DatabaseError`, or `RowError` from `T.init(row:)`.
    public func queryOne<T: RowDecodable>(_ type: T.Type, _ sql: SQL) throws -> T? {
        try queryOne(sql).map(T.init(row:))
    }

    /// The first column of the first row as an integer (`COUNT(*)`, `MAX(seq)`), or nil when
    /// there is no row or the value is NULL.
    /// - Throws: `DatabaseError`, or `RowError` when the value is not an integer.
    public func scalar(_ sql: SQL) throws -> Int64? {
        switch backing {
        case .sqlite(let c): try c.scalar(sql)
        case .postgres(let c): try c.scalar(sql)
        }
    }

    /// Runs an `INSERT … RETURNING <integer column>` of one row and returns that integer (the
    /// new row's key).
    /// - Throws: `DatabaseError`; `RowError.unexpectedNull` when no row or NULL came back.
    public func insertReturning(_ sql: SQL) throws -> Int64 {
        guard let key = try scalar(sql) else { throw RowError(column: "RETURNING", problem: .unexpectedNull) }
        return key
    }

    /// Whether the statement returns at least one row.
    /// - Throws: `DatabaseError`.
    public func exists(_ sql: SQL) throws -> Bool {
        switch backing {
        case .sqlite(let c): try c.exists(sql)
        case .postgres(let c): try c.exists(sql)
        }
    }

    /// Runs a statement whose rows are two integers each (e.g. `RETURNING recipient, seq`),
    /// without a `Row` per row (a fan-out's hot path). A NULL reads as 0.
    /// - Throws: `DatabaseError`.
    public func integerPairs(_ sql: SQL) throws -> [(Int64, Int64)] {
        switch backing {
        case .sqlite(let c): try c.integerPairs(sql)
        case .postgres(let c): try c.integerPairs(sql)
        }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int {
        switch backing {
        case .sqlite(let c): c.changes
        case .postgres(let c): c.changes
        }
    }

    /// Runs `body` so that its statements see one snapshot of the database (a read-only
    /// transaction: `SQL.beginSnapshot`), rolled back if `body` throws.
    /// - Throws: what `body` throws, or `DatabaseError`.
    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        try transaction(opening: SQL.beginSnapshot, body)
    }

    /// Runs `body` in a write transaction (`SQL.beginWrite`), committing on return, rolling back
    /// on throw.
    /// - Throws: what `body` throws, or `DatabaseError`.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(opening: SQL.beginWrite, body)
    }

    /// The transaction bracket, once for both engines: `begin`, `body`, then `COMMIT`, or
    /// `ROLLBACK` when anything threw.
    private func transaction<T>(opening begin: SQL, _ body: () throws -> T) throws -> T {
        try execute(begin)
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` inside a savepoint: released when `body` returns a value `keep` accepts,
    /// rolled back (and released) when it returns one `keep` refuses or throws. The value is
    /// returned either way.
    /// - Throws: what `body` throws (after the rollback), or `DatabaseError`.
    /// (`SAVEPOINT s`: a savepoint inside another of the same name hides it until released.)
    public func savepoint<T>(_ body: () throws -> T, keep: (T) -> Bool = { _ in true }) throws -> T {
        try execute("SAVEPOINT s")
        let result: T
        do {
            result = try body()
        } catch {
            // A rollback that fails too (a lost connection) leaves the enclosing transaction
            // to fail with `body`'s error.
            try? execute("ROLLBACK TO s")
            try? execute("RELEASE s")
            throw error
        }
        if !keep(result) { try execute("ROLLBACK TO s") }
        try execute("RELEASE s")
        return result
    }

    /// Bounds each statement by the time left until `deadline` (Unix ms; nil: no bound), as
    /// PostgreSQL's `statement_timeout` (rounded up to 250 ms steps, so that most requests
    /// reuse the setting in force instead of paying a round trip). SQLite has no statement
    /// timeout: a no-op there.
    /// - Throws: `DatabaseError`.
    public func bound(by deadline: Int64?) throws {
        guard case .postgres(let c) = backing else { return }
        guard let deadline else { return try c.setStatementTimeout(ms: 0) }
        let left = max(1, deadline - Timestamp.nowMs())
        try c.setStatementTimeout(ms: Int((left + 249) / 250 * 250))
    }
}

@available(*, unavailable, message: "DatabaseConnection is confined to its Database queue")
extension DatabaseConnection: Sendable {}
