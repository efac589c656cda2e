import CSQLite

/// A SQLite result code, primary or extended, by name (the shape of GRDB's `ResultCode`):
/// <https://www.sqlite.org/rescode.html>. An extended code carries its primary code in its low
/// 8 bits, so `SQLiteResultCode.constraintUnique.primary == .constraint`.
public struct SQLiteResultCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as SQLite returns it (`sqlite3_extended_errcode`).
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code (the low 8 bits): `.constraint` for every constraint violation.
    public var primary: SQLiteResultCode { SQLiteResultCode(rawValue: rawValue & 0xFF) }

    public var description: String { "\(rawValue)" }

    // Primary codes.
    /// SQLITE_OK (0).
    public static let ok = SQLiteResultCode(rawValue: 0)
    /// SQLITE_ERROR (1): a generic error (e.g. an SQL syntax error).
    public static let error = SQLiteResultCode(rawValue: 1)
    /// SQLITE_INTERNAL (2).
    public static let `internal` = SQLiteResultCode(rawValue: 2)
    /// SQLITE_PERM (3).
    public static let perm = SQLiteResultCode(rawValue: 3)
    /// SQLITE_ABORT (4).
    public static let abort = SQLiteResultCode(rawValue: 4)
    /// SQLITE_BUSY (5): another connection holds a conflicting lock (after the busy timeout).
    public static let busy = SQLiteResultCode(rawValue: 5)
    /// SQLITE_LOCKED (6): a conflict within the same connection or shared cache.
    public static let locked = SQLiteResultCode(rawValue: 6)
    /// SQLITE_NOMEM (7).
    public static let noMemory = SQLiteResultCode(rawValue: 7)
    /// SQLITE_READONLY (8).
    public static let readOnly = SQLiteResultCode(rawValue: 8)
    /// SQLITE_INTERRUPT (9).
    public static let interrupt = SQLiteResultCode(rawValue: 9)
    /// SQLITE_IOERR (10).
    public static let ioError = SQLiteResultCode(rawValue: 10)
    /// SQLITE_CORRUPT (11).
    public static let corrupt = SQLiteResultCode(rawValue: 11)
    /// SQLITE_FULL (13).
    public static let full = SQLiteResultCode(rawValue: 13)
    /// SQLITE_CANTOPEN (14).
    public static let cantOpen = SQLiteResultCode(rawValue: 14)
    /// SQLITE_SCHEMA (17).
    public static let schema = SQLiteResultCode(rawValue: 17)
    /// SQLITE_TOOBIG (18).
    public static let tooBig = SQLiteResultCode(rawValue: 18)
    /// SQLITE_CONSTRAINT (19): any constraint violation (see the extended codes below).
    public static let constraint = SQLiteResultCode(rawValue: 19)
    /// SQLITE_MISMATCH (20).
    public static let mismatch = SQLiteResultCode(rawValue: 20)
    /// SQLITE_MISUSE (21).
    public static let misuse = SQLiteResultCode(rawValue: 21)
    /// SQLITE_RANGE (25): a bind index out of range.
    public static let range = SQLiteResultCode(rawValue: 25)
    /// SQLITE_ROW (100): `sqlite3_step` has a row.
    public static let row = SQLiteResultCode(rawValue: 100)
    /// SQLITE_DONE (101): `sqlite3_step` has finished.
    public static let done = SQLiteResultCode(rawValue: 101)

    // Extended codes.
    /// SQLITE_BUSY_SNAPSHOT (517): a WAL read transaction cannot be upgraded to a write.
    public static let busySnapshot = SQLiteResultCode(rawValue: 517)
    /// SQLITE_CONSTRAINT_CHECK (275).
    public static let constraintCheck = SQLiteResultCode(rawValue: 275)
    /// SQLITE_CONSTRAINT_FOREIGNKEY (787).
    public static let constraintForeignKey = SQLiteResultCode(rawValue: 787)
    /// SQLITE_CONSTRAINT_NOTNULL (1299).
    public static let constraintNotNull = SQLiteResultCode(rawValue: 1299)
    /// SQLITE_CONSTRAINT_PRIMARYKEY (1555).
    public static let constraintPrimaryKey = SQLiteResultCode(rawValue: 1555)
    /// SQLITE_CONSTRAINT_UNIQUE (2067).
    public static let constraintUnique = SQLiteResultCode(rawValue: 2067)
}

/// An error from SQLite: result code, SQLite's message and the SQL that failed.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The extended result code (e.g. `.constraintUnique`, SQLITE_CONSTRAINT_UNIQUE).
    public var code: SQLiteResultCode
    public var message: String
    public var sql: String?

    /// - Parameter code: the extended result code as SQLite returns it.
    public init(code: Int32, message: String, sql: String?) {
        self.code = SQLiteResultCode(rawValue: code)
        self.message = message
        self.sql = sql
    }

    public var description: String { "SQLite error \(code): \(message)" + (sql.map { " [\($0)]" } ?? "") }

    /// True for UNIQUE and PRIMARY KEY constraint violations.
    public var isUniqueViolation: Bool { code == .constraintUnique || code == .constraintPrimaryKey }
}

/// SQLITE_TRANSIENT ((sqlite3_destructor_type)-1): SQLite copies bound text and blobs before returning.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection with a prepared-statement cache. Not thread-safe: `Database` confines
/// each connection to one dispatch queue.
public final class SQLiteConnection {
    private var db: OpaquePointer?
    private var cache: [String: (statement: OpaquePointer, columns: ColumnNames)] = [:]
    public let path: String

    /// WAL frames (pages) after which a commit checkpoints: `PRAGMA wal_autocheckpoint`.
    public static let walAutocheckpointFrames = 10_000

    /// Opens (creating) the database at `path` in WAL mode with a busy timeout.
    /// - Parameters:
    ///   - busyTimeoutMs: how long a locked database is retried before SQLITE_BUSY, in ms.
    /// - Throws: `SQLiteError`.
    public init(path: String, readOnly: Bool = false, busyTimeoutMs: Int32 = 5_000) throws {
        self.path = path
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw SQLiteError(code: rc, message: message, sql: nil)
        }
        db = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMs)
        if !readOnly {
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=NORMAL")
            // Checkpoint every 10,000 WAL frames (about 40 MB) instead of SQLite's default of
            // 1,000: a checkpoint copies each page once however often the WAL holds it, and a
            // like rewrites the same few hot pages (a recipient's recent rows, its groups), so
            // between 1,000-frame checkpoints most frames were copied again. Measured with
            // `LoadTest likes` (docs/loadtest.md, "Storage per like").
            try execute("PRAGMA wal_autocheckpoint=\(Self.walAutocheckpointFrames)")
        }
        // Temporary tables, sorters and statement journals (a savepoint's undo, spilled to a
        // file past 64 KiB by default) stay in memory: each spilled file was created,
        // written, and freed page by page on close, on the writer's thread.
        try execute("PRAGMA temp_store=MEMORY")
        // SQLite's default page cache is 2 MB per connection: far too small for indexes of
        // millions of rows, so a 100,000-recipient fan-out re-read index pages all the time.
        // 32 MiB of cache, and reads through a memory map (the OS page cache, no copy per read).
        try execute("PRAGMA cache_size=-32768")
        try execute("PRAGMA mmap_size=268435456")
        try execute("PRAGMA foreign_keys=ON")
    }

    deinit {
        for (_, entry) in cache { sqlite3_finalize(entry.statement) }
        sqlite3_close_v2(db)
    }

    private func error(_ rc: Int32, _ sql: String?) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), sql: sql)
    }

    /// Runs one or more statements without parameters or results (schema, pragmas).
    public func execute(_ sql: String) throws {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? "error"
            sqlite3_free(errmsg)
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: message, sql: sql)
        }
    }

    private func statement(_ sql: String) throws -> (statement: OpaquePointer, columns: ColumnNames) {
        if let entry = cache[sql] { return entry }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(rc, sql) }
        let names = (0..<sqlite3_column_count(stmt)).map { String(cString: sqlite3_column_name(stmt, $0)) }
        let entry = (stmt, ColumnNames(names))
        cache[sql] = entry
        return entry
    }

    /// Prepares (or reuses) `sql` and binds `params` in order.
    private func prepared(_ sql: String, _ params: [any SQLBindable]) throws -> (statement: OpaquePointer, columns: ColumnNames) {
        let (stmt, names) = try statement(sql)
        for (i, p) in params.enumerated() {
            let idx = Int32(i + 1)
            let rc: Int32
            switch p.sqlValue {
            case .null: rc = sqlite3_bind_null(stmt, idx)
            case .int(let v): rc = sqlite3_bind_int64(stmt, idx, v)
            case .double(let v): rc = sqlite3_bind_double(stmt, idx, v)
            case .text(let v):
                // With its byte length: a length of -1 would stop at the first NUL in the text.
                var text = v
                rc = text.withUTF8 { bytes in
                    guard let base = bytes.baseAddress, bytes.count > 0 else {
                        return sqlite3_bind_text(stmt, idx, "", 0, sqliteTransient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text(stmt, idx, $0, Int32(bytes.count), sqliteTransient)
                    }
                }
            case .blob(let v):
                rc = v.withUnsafeBytes { sqlite3_bind_blob(stmt, idx, $0.baseAddress, Int32($0.count), sqliteTransient) }
            }
            if rc != SQLITE_OK {
                sqlite3_reset(stmt)
                sqlite3_clear_bindings(stmt)
                throw error(rc, sql)
            }
        }
        return (stmt, names)
    }

    /// Runs a statement whose rows are two integers each (e.g. `RETURNING recipient, seq`) and
    /// returns them, without a `Row` per row: the hot path of a fan-out, which returns tens of
    /// thousands of rows per statement. A NULL reads as 0.
    /// - Throws: `SQLiteError` with the SQL.
    public func integerPairs(_ sql: String, _ params: [any SQLBindable] = []) throws -> [(Int64, Int64)] {
        let (stmt, _) = try prepared(sql, params)
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        var out: [(Int64, Int64)] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc, sql) }
            out.append((sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1)))
        }
        return out
    }

    /// Runs a statement with parameters (`?` placeholders, bound in order) and returns all rows.
    /// - Throws: `SQLiteError` with the SQL.
    @discardableResult
    public func query(_ sql: String, _ params: [any SQLBindable] = []) throws -> [Row] {
        try rows(sql, params, limit: .max)
    }

    /// At most `limit` rows of the statement: stepping stops there, so the first row of a large
    /// result costs one row (`queryOne`, `scalar` and `exists` read that way; reading them all
    /// made a fan-out's "any followers left?" read every remaining follower, quadratic in a
    /// 1,000,000-follower fan-out). Changes of a statement with RETURNING are all made at the
    /// first step (SQLite's RETURNING documentation), so stopping early never skips a change.
    /// - Throws: `SQLiteError` with the SQL.
    private func rows(_ sql: String, _ params: [any SQLBindable], limit: Int) throws -> [Row] {
        let (stmt, names) = try prepared(sql, params)
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        var rows: [Row] = []
        let columns = sqlite3_column_count(stmt)
        while rows.count < limit {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc, sql) }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(columns))
            for c in 0..<columns {
                switch sqlite3_column_type(stmt, c) {
                case SQLITE_INTEGER: values.append(.int(sqlite3_column_int64(stmt, c)))
                case SQLITE_FLOAT: values.append(.double(sqlite3_column_double(stmt, c)))
                case SQLITE_TEXT:
                    let n = Int(sqlite3_column_bytes(stmt, c))  // after column_text: bytes of the UTF-8 form
                    let p = sqlite3_column_text(stmt, c)
                    values.append(
                        .text(p.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: n), as: UTF8.self) } ?? ""))
                case SQLITE_BLOB:
                    let n = Int(sqlite3_column_bytes(stmt, c))
                    if n > 0, let p = sqlite3_column_blob(stmt, c) {
                        values.append(.blob(Array(UnsafeRawBufferPointer(start: p, count: n))))
                    } else {
                        values.append(.blob([]))
                    }
                default: values.append(.null)
                }
            }
            rows.append(Row(columns: names, values: values))
        }
        return rows
    }

    /// The first row, or nil.
    public func queryOne(_ sql: String, _ params: [any SQLBindable] = []) throws -> Row? {
        try rows(sql, params, limit: 1).first
    }

    /// Every row decoded as `T`.
    /// - Throws: `SQLiteError`, or `RowError` from `T.init(row:)`.
    public func query<T: RowDecodable>(_ type: T.Type, _ sql: String, _ params: [any SQLBindable] = []) throws -> [T] {
        try query(sql, params).map(T.init(row:))
    }

    /// The first row decoded as `T`, or nil.
    /// - Throws: `SQLiteError`, or `RowError` from `T.init(row:)`.
    public func queryOne<T: RowDecodable>(_ type: T.Type, _ sql: String, _ params: [any SQLBindable] = []) throws -> T? {
        try rows(sql, params, limit: 1).first.map(T.init(row:))
    }

    /// The first column of the first row as an integer (`COUNT(*)`, `MAX(seq)`), or nil when
    /// there is no row or the value is NULL.
    /// - Throws: `SQLiteError`, or `RowError` when the value is not an integer.
    public func scalar(_ sql: String, _ params: [any SQLBindable] = []) throws -> Int64? {
        guard let row = try rows(sql, params, limit: 1).first, let column = row.columns.names.first else { return nil }
        return try row.optionalInt64(column)
    }

    /// Whether the statement returns at least one row (`SELECT 1 ... LIMIT 1`).
    /// - Throws: `SQLiteError`.
    public func exists(_ sql: String, _ params: [any SQLBindable] = []) throws -> Bool {
        try !rows(sql, params, limit: 1).isEmpty
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(db)) }

    /// The rowid of the last INSERT.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(db) }

    /// Runs `body` in a transaction (`BEGIN IMMEDIATE`), committing on return, rolling back on throw.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try inTransaction("BEGIN IMMEDIATE", body)
    }

    /// Runs `body` inside `BEGIN`…`COMMIT` on a read connection, so its statements see one
    /// snapshot of the database (WAL); rolled back if `body` throws.
    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        try inTransaction("BEGIN", body)
    }

    private func inTransaction<T>(_ begin: String, _ body: () throws -> T) throws -> T {
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
}

@available(*, unavailable, message: "SQLiteConnection is confined to its Database queue")
extension SQLiteConnection: Sendable {}
