import CLibPQ

/// Running statements: prepared once per statement and parameter types, parameters sent in
/// binary, results read by column type (`PostgresConnection+Values.swift`).
extension PostgresConnection {
    /// Prepares (once per statement and parameter types) and runs `sql`; `body` reads the result.
    private func withResult<T>(_ sql: SQL, _ body: (OpaquePointer) throws -> T) throws -> T {
        try ensureConnected()
        let values = sql.binds
        var signature = sql.source
        signature.append("\u{0}")
        for v in values {
            switch v {
            case .null: signature.append("n")
            case .int: signature.append("i")
            case .double: signature.append("d")
            case .text: signature.append("t")
            case .blob: signature.append("b")
            }
        }
        let prepared: (name: String, text: String)
        if let found = statements[signature] {
            prepared = found
        } else {
            // A bounded cache: statements built with a varying number of parameters (`IN (?,…)`)
            // would otherwise grow it, and the server's session with it, without end.
            if statements.count >= maxStatements && !inTransaction {
                _ = try run("DEALLOCATE ALL", expectRows: false)
                statements = [:]
            }
            let text = sql.text(for: .postgres)
            let types: [UInt32] = values.map { value in
                switch value {
                case .null: return 0
                case .int: return OID.int8
                case .double: return OID.float8
                case .text: return OID.text
                case .blob: return OID.bytea
                }
            }
            nextStatement += 1
            let name = "s\(nextStatement)"
            let result = types.withUnsafeBufferPointer { PQprepare(conn, name, text, Int32(types.count), $0.baseAddress) }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw error(result, sql: text) }
            prepared = (name, text)
            statements[signature] = prepared
        }
        // Parameters: integers and floats as 8-byte big-endian binary, bytea binary, text as text.
        var buffers: [[UInt8]?] = []
        buffers.reserveCapacity(values.count)
        var formats: [Int32] = []
        for v in values {
            switch v {
            case .null:
                buffers.append(nil)
                formats.append(0)
            case .int(let n):
                buffers.append(withUnsafeBytes(of: n.bigEndian) { Array($0) })
                formats.append(1)
            case .double(let d):
                buffers.append(withUnsafeBytes(of: d.bitPattern.bigEndian) { Array($0) })
                formats.append(1)
            case .text(let s):
                buffers.append(Array(s.utf8))
                formats.append(1)  // text's binary format is its bytes
            case .blob(let b):
                buffers.append(b)
                formats.append(1)
            }
        }
        let lengths = buffers.map { Int32($0?.count ?? 0) }
        let result = withPointers(buffers) { pointers in
            PQexecPrepared(conn, prepared.name, Int32(values.count), pointers, lengths, formats, 0)
        }
        defer { PQclear(result) }
        guard let result else { throw error(nil, sql: prepared.text) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(result, sql: prepared.text) }
        lastChanges = Int(String(cString: PQcmdTuples(result))) ?? 0
        return try body(result)
    }

    /// Calls `body` with C pointers to each buffer (nil for NULL), valid for the call.
    private func withPointers<T>(_ buffers: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        var pointers: [UnsafePointer<CChar>?] = []
        pointers.reserveCapacity(buffers.count)
        func recurse(_ i: Int) -> T {
            if i == buffers.count { return body(pointers) }
            guard var buffer = buffers[i] else {
                pointers.append(nil)
                return recurse(i + 1)
            }
            // libpq needs a pointer for a zero-length non-NULL value (its length stays 0).
            if buffer.isEmpty { buffer = [0] }
            return buffer.withUnsafeBufferPointer { p in
                pointers.append(UnsafeRawPointer(p.baseAddress!).assumingMemoryBound(to: CChar.self))
                return recurse(i + 1)
            }
        }
        return recurse(0)
    }

    /// Runs a statement with its bound values and returns all rows.
    /// - Throws: `DatabaseError` with the SQL.
    @discardableResult
    public func query(_ sql: SQL) throws -> [Row] {
        try withResult(sql) { rows($0, limit: .max) }
    }

    /// The first row, or nil.
    /// - Throws: `DatabaseError`.
    public func queryOne(_ sql: SQL) throws -> Row? {
        try withResult(sql) { rows($0, limit: 1).first }
    }

    /// The first column of the first row as an integer, nil for no row or NULL.
    /// - Throws: `DatabaseError`; `RowError` when the value is not an integer.
    public func scalar(_ sql: SQL) throws -> Int64? {
        try withResult(sql) { result in
            guard PQntuples(result) > 0, PQnfields(result) > 0 else { return nil }
            switch value(result, 0, 0) {
            case .null: return nil
            case .int(let v): return v
            case let other:
                throw RowError(column: String(cString: PQfname(result, 0)), problem: .typeMismatch(other.storageClass))
            }
        }
    }

    /// Whether the statement returns at least one row.
    /// - Throws: `DatabaseError`.
    /// A query (`SELECT`) is asked as `SELECT EXISTS (…)`, so the server stops at the first row
    /// instead of sending every row (a fan-out's "followers left?" would read all of them).
    public func exists(_ sql: SQL) throws -> Bool {
        let head = sql.source.prefix(6).uppercased()
        guard head == "SELECT" || head.hasPrefix("WITH") else { return try withResult(sql) { PQntuples($0) > 0 } }
        return try scalar("SELECT EXISTS (\(sql))::int AS e") == 1
    }

    /// Rows of two integers each (a NULL reads as 0).
    /// - Throws: `DatabaseError`.
    public func integerPairs(_ sql: SQL) throws -> [(Int64, Int64)] {
        try withResult(sql) { result in
            let n = PQntuples(result)
            var out: [(Int64, Int64)] = []
            out.reserveCapacity(Int(n))
            for r in 0..<n {
                func int(_ c: Int32) -> Int64 {
                    if PQgetisnull(result, r, c) != 0 { return 0 }
                    return Self.integer(
                        UnsafeRawBufferPointer(start: PQgetvalue(result, r, c), count: Int(PQgetlength(result, r, c))))
                        ?? 0
                }
                out.append((int(0), int(1)))
            }
            return out
        }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE run with parameters.
    public var changes: Int { lastChanges }
}
