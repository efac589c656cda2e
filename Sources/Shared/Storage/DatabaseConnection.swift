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
/// SQL is written with `?` placeholders bound in order (`?NNN` for a numbered one), in the
/// dialect both engines accept (`INSERT … ON CONFLICT DO NOTHING`, `RETURNING`, savepoints).
/// Where the engines differ, a store passes one text per engine through `sql(sqlite:postgres:)`.
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

    /// The text for this connection's engine, for a statement whose dialects differ.
    public func sql(sqlite: String, postgres: String) -> String {
        switch engine {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }

    /// Runs one or more statements without parameters or results (schema, savepoints).
    /// - Throws: the engine's error (`SQLiteError`, `PostgresError`).
    public func execute(_ sql: String) throws {
        switch backing {
        case .sqlite(let c): try c.execute(sql)
        case .postgres(let c): try c.execute(sql)
        }
    }

    /// Runs a statement with parameters and returns all rows.
    /// - Throws: the engine's error (`SQLiteError`, `PostgresError`) with the SQL.
    @discardableResult
    public func query(_ sql: String, _ params: [any SQLBindable] = []) throws -> [Row] {
        switch backing {
        case .sqlite(let c): try c.query(sql, params)
        case .postgres(let c): try c.query(sql, params)
        }
    }

    /// The first row, or nil (reading stops at the first row).
    /// - Throws: the engine's error.
    public func queryOne(_ sql: String, _ params: [any SQLBindable] = []) throws -> Row? {
        switch backing {
        case .sqlite(let c): try c.queryOne(sql, params)
        case .postgres(let c): try c.queryOne(sql, params)
        }
    }

    /// Every row decoded as `T`.
    /// - Throws: the engine's error, or `RowError` from `T.init(row:)`.
    public func query<T: RowDecodable>(_ type: T.Type, _ sql: String, _ params: [any SQLBindable] = []) throws -> [T] {
        try query(sql, params).map(T.init(row:))
    }

    /// The first row decoded as `T`, or nil.
    /// - Throws: the engine's error, or `RowError` from `T.init(row:)`.
    public func queryOne<T: RowDecodable>(_ type: T.Type, _ sql: String, _ params: [any SQLBindable] = []) throws -> T? {
        try queryOne(sql, params).map(T.init(row:))
    }

    /// The first column of the first row as an integer (`COUNT(*)`, `MAX(seq)`), or nil when
    /// there is no row or the value is NULL.
    /// - Throws: the engine's error, or `RowError` when the value is not an integer.
    public func scalar(_ sql: String, _ params: [any SQLBindable] = []) throws -> Int64? {
        switch backing {
        case .sqlite(let c): try c.scalar(sql, params)
        case .postgres(let c): try c.scalar(sql, params)
        }
    }

    /// Runs an `INSERT … RETURNING <integer column>` of one row and returns that integer (the
    /// new row's key).
    /// - Throws: the engine's error; `RowError.unexpectedNull` when no row or NULL came back.
    public func insertReturning(_ sql: String, _ params: [any SQLBindable] = []) throws -> Int64 {
        guard let key = try scalar(sql, params) else { throw RowError(column: "RETURNING", problem: .unexpectedNull) }
        return key
    }

    /// Whether the statement returns at least one row.
    /// - Throws: the engine's error.
    public func exists(_ sql: String, _ params: [any SQLBindable] = []) throws -> Bool {
        switch backing {
        case .sqlite(let c): try c.exists(sql, params)
        case .postgres(let c): try c.exists(sql, params)
        }
    }

    /// Runs a statement whose rows are two integers each (e.g. `RETURNING recipient, seq`),
    /// without a `Row` per row (a fan-out's hot path). A NULL reads as 0.
    /// - Throws: the engine's error.
    public func integerPairs(_ sql: String, _ params: [any SQLBindable] = []) throws -> [(Int64, Int64)] {
        switch backing {
        case .sqlite(let c): try c.integerPairs(sql, params)
        case .postgres(let c): try c.integerPairs(sql, params)
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
    /// transaction), rolled back if `body` throws.
    /// - Throws: what `body` throws, or the engine's error.
    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        switch backing {
        case .sqlite(let c): try c.snapshot(body)
        case .postgres(let c): try c.snapshot(body)
        }
    }

    /// Runs `body` in a write transaction, committing on return, rolling back on throw.
    /// - Throws: what `body` throws, or the engine's error.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        switch backing {
        case .sqlite(let c): try c.transaction(body)
        case .postgres(let c): try c.transaction(body)
        }
    }

    /// Bounds each statement by the time left until `deadline` (Unix ms; nil: no bound), as
    /// PostgreSQL's `statement_timeout` (rounded up to 250 ms steps, so that most requests
    /// reuse the setting in force instead of paying a round trip). SQLite has no statement
    /// timeout: a no-op there.
    /// - Throws: `PostgresError`.
    public func bound(by deadline: Int64?) throws {
        guard case .postgres(let c) = backing else { return }
        guard let deadline else { return try c.setStatementTimeout(ms: 0) }
        let left = max(1, deadline - Timestamp.nowMs())
        try c.setStatementTimeout(ms: Int((left + 249) / 250 * 250))
    }

    /// The statement that opens a write transaction: `BEGIN IMMEDIATE` on SQLite (the write
    /// lock at once, so a batch never fails to upgrade), `BEGIN` on PostgreSQL.
    var beginWrite: String { sql(sqlite: "BEGIN IMMEDIATE", postgres: "BEGIN") }
}

@available(*, unavailable, message: "DatabaseConnection is confined to its Database queue")
extension DatabaseConnection: Sendable {}
