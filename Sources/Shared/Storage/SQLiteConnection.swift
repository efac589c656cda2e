import CSQLite

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
    /// - Throws: `DatabaseError`.
    public init(path: String, readOnly: Bool = false, busyTimeoutMs: Int32 = 5_000) throws {
        self.path = path
        let flags = (readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_NOMUTEX
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw Self.error(code: SQLiteResultCode(rawValue: rc), message: message, sql: nil)
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
            try execute("PRAGMA wal_autocheckpoint=\(literal: Self.walAutocheckpointFrames)")
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

    /// The error SQLite reports for the last call on this connection, with `sql`'s text.
    private func error(_ sql: SQL?) -> DatabaseError {
        error(message: String(cString: sqlite3_errmsg(db)), sql)
    }

    private func error(message: String, _ sql: SQL?) -> DatabaseError {
        var error = Self.error(
            code: SQLiteResultCode(rawValue: sqlite3_extended_errcode(db)), message: message,
            sql: sql?.text(for: .sqlite))
        if error.kind == .uniqueViolation { error.constraint = constraintName(code: error.resultCode, message: message) }
        return error
    }

    /// A `DatabaseError` of the kind `code` stands for.
    static func error(code: SQLiteResultCode, message: String, sql: String?) -> DatabaseError {
        let kind: DatabaseError.Kind =
            switch code {
            case .constraintUnique, .constraintPrimaryKey: .uniqueViolation
            case _ where code.primary == .busy || code.primary == .locked: .busy
            default: .other
            }
        return DatabaseError(kind: kind, engine: .sqlite, resultCode: code, message: message, sql: sql)
    }

    /// The name of the constraint a unique violation broke, from SQLite's message
    /// ("UNIQUE constraint failed: t.a, t.b", or "… failed: index 'name'" for an index on
    /// expressions) and the table's unique indexes, by the names PostgreSQL gives them: the
    /// index's own name for `CREATE UNIQUE INDEX`, `<table>_pkey` for the primary key,
    /// `<table>_<columns>_key` for a `UNIQUE` column constraint. Nil when it cannot be found.
    private func constraintName(code: SQLiteResultCode?, message: String) -> String? {
        let prefix = "UNIQUE constraint failed: "
        guard message.hasPrefix(prefix) else { return nil }
        let rest = message.dropFirst(prefix.count)
        if rest.hasPrefix("index '"), rest.hasSuffix("'") { return String(rest.dropFirst("index '".count).dropLast()) }
        let qualified = rest.split(separator: ",").map { $0.trimmingPrefix(" ").split(separator: ".", maxSplits: 1) }
        guard let table = qualified.first?.first.map(String.init), qualified.allSatisfy({ $0.count == 2 }) else {
            return nil
        }
        let columns = qualified.map { String($0[1]) }
        if code == .constraintPrimaryKey { return "\(table)_pkey" }
        guard
            let indexes = try? query(
                "SELECT name, origin FROM pragma_index_list(\(table)) WHERE \"unique\" = 1 ORDER BY seq")
        else { return nil }
        for index in indexes {
            guard let name = try? index.string("name"),
                let names = try? query("SELECT name FROM pragma_index_info(\(name)) ORDER BY seqno"),
                names.compactMap({ try? $0.optionalString("name") }) == columns
            else { continue }
            switch try? index.string("origin") {
            case "pk": return "\(table)_pkey"
            case "u": return "\(table)_\(columns.joined(separator: "_"))_key"
            default: return name
            }
        }
        return nil
    }

    /// Runs one or more statements without parameters or results (schema, pragmas); nothing
    /// when `sql` has no text on SQLite (`SQL.postgresOnly`).
    /// - Throws: `DatabaseError`.
    public func execute(_ sql: SQL) throws {
        precondition(sql.binds.isEmpty, "execute runs statements without parameters: use query")
        let text = sql.text(for: .sqlite)
        if text.isEmpty { return }
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, text, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? "error"
            sqlite3_free(errmsg)
            throw error(message: message, sql)
        }
    }

    /// The prepared statement of `sql`, from the cache (keyed by `sql.source`: one entry per
    /// statement whatever its values) or prepared now from its SQLite text.
    private func statement(_ sql: SQL) throws -> (statement: OpaquePointer, columns: ColumnNames) {
        if let entry = cache[sql.source] { return entry }
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql.text(for: .sqlite), -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error(sql) }
        let names = (0..<sqlite3_column_count(stmt)).map { String(cString: sqlite3_column_name(stmt, $0)) }
        let entry = (stmt, ColumnNames(names))
        cache[sql.source] = entry
        return entry
    }

    /// Prepares (or reuses) `sql` and binds its values in order.
    private func prepared(_ sql: SQL) throws -> (statement: OpaquePointer, columns: ColumnNames) {
        let (stmt, names) = try statement(sql)
        for (i, value) in sql.binds.enumerated() {
            let idx = Int32(i + 1)
            let rc: Int32
            switch value {
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
                let failure = error(sql)
                sqlite3_reset(stmt)
                sqlite3_clear_bindings(stmt)
                throw failure
            }
        }
        return (stmt, names)
    }

    /// Runs a statement whose rows are two integers each (e.g. `RETURNING recipient, seq`) and
    /// returns them, without a `Row` per row: the hot path of a fan-out, which returns tens of
    /// thousands of rows per statement. A NULL reads as 0.
    /// - Throws: `DatabaseError` with the SQL.
    public func integerPairs(_ sql: SQL) throws -> [(Int64, Int64)] {
        let (stmt, _) = try prepared(sql)
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        var out: [(Int64, Int64)] = []
        while true {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(sql) }
            out.append((sqlite3_column_int64(stmt, 0), sqlite3_column_int64(stmt, 1)))
        }
        return out
    }

    /// Runs a statement with its bound values and returns all rows.
    /// - Throws: `DatabaseError` with the SQL.
    @discardableResult
    public func query(_ sql: SQL) throws -> [Row] {
        try rows(sql, limit: .max)
    }

    /// At most `limit` rows of the statement: stepping stops there, so the first row of a large
    /// result costs one row (`queryOne`, `scalar` and `exists` read that way; reading them all
    /// made a fan-out's "any followers left?" read every remaining follower, quadratic in a
    /// 1,000,000-follower fan-out). Changes of a statement with RETURNING are all made at the
    /// first step (SQLite's RETURNING documentation), so stopping early never skips a change.
    /// - Throws: `DatabaseError` with the SQL.
    private func rows(_ sql: SQL, limit: Int) throws -> [Row] {
        let (stmt, names) = try prepared(sql)
        defer {
            sqlite3_reset(stmt)
            sqlite3_clear_bindings(stmt)
        }
        var rows: [Row] = []
        let columns = sqlite3_column_count(stmt)
        while rows.count < limit {
            let rc = sqlite3_step(stmt)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(sql) }
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
    /// - Throws: `DatabaseError`.
    public func queryOne(_ sql: SQL) throws -> Row? {
        try rows(sql, limit: 1).first
    }

    /// The first column of the first row as an integer (`COUNT(*)`, `MAX(seq)`), or nil when
    /// there is no row or the value is NULL.
    /// - Throws: `DatabaseError`, or `RowError` when the value is not an integer.
    public func scalar(_ sql: SQL) throws -> Int64? {
        guard let row = try rows(sql, limit: 1).first, let column = row.columns.names.first else { return nil }
        return try row.optionalInt64(column)
    }

    /// Whether the statement returns at least one row (`SELECT 1 ... LIMIT 1`).
    /// - Throws: `DatabaseError`.
    public func exists(_ sql: SQL) throws -> Bool {
        try !rows(sql, limit: 1).isEmpty
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(db)) }

    /// The rowid of the last INSERT.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(db) }
}

@available(*, unavailable, message: "SQLiteConnection is confined to its Database queue")
extension SQLiteConnection: Sendable {}
