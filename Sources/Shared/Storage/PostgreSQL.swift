import CLibPQ
import Glibc
import Support
import Wire

/// An error from PostgreSQL or libpq: SQLSTATE, the server's message and detail, and the SQL
/// that failed. Codes are PostgreSQL's (Appendix A, "PostgreSQL Error Codes").
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What a caller may do about an error, by SQLSTATE.
    public enum Kind: Sendable, Equatable {
        /// 23505 `unique_violation`.
        case uniqueViolation
        /// 40001 `serialization_failure`: the transaction may be retried.
        case serializationFailure
        /// 40P01 `deadlock_detected`: the transaction may be retried.
        case deadlock
        /// 57014 `query_canceled`: the statement timeout (a request's deadline) ran out.
        case statementTimeout
        /// 22021 `character_not_in_repertoire`: a text value PostgreSQL cannot hold, U+0000
        /// (SQLite stores it; a lookup key with one, such as a login, reaches a store unvalidated).
        case invalidText
        /// The connection is gone (server restart, network) or could not be made; libpq
        /// reports no SQLSTATE, or class 08 `connection_exception`, or 57P01..57P03 (the
        /// server is shutting down or starting).
        case connectionLost
        /// Anything else (a syntax error, a constraint other than uniqueness, ...).
        case other
    }

    /// The five-character SQLSTATE, nil when libpq failed before the server answered.
    public var sqlState: String?
    public var message: String
    public var detail: String?
    public var sql: String?
    /// Whether the connection was found dead (decides `kind` when there is no SQLSTATE).
    var connectionDead: Bool

    public init(sqlState: String?, message: String, detail: String? = nil, sql: String? = nil, connectionDead: Bool) {
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.sql = sql
        self.connectionDead = connectionDead
    }

    public var kind: Kind {
        switch sqlState {
        case "23505": return .uniqueViolation
        case "40001": return .serializationFailure
        case "40P01": return .deadlock
        case "57014": return .statementTimeout
        case "22021": return .invalidText
        case "57P01", "57P02", "57P03": return .connectionLost
        case let s? where s.hasPrefix("08"): return .connectionLost
        case nil: return connectionDead ? .connectionLost : .other
        default: return connectionDead ? .connectionLost : .other
        }
    }

    public var description: String {
        (sqlState.map { "PostgreSQL error \($0): " } ?? "PostgreSQL connection error: ") + message
            + (detail.map { " (\($0))" } ?? "")
            + (sql.map { " [\($0)]" } ?? "")
    }
}

extension PostgresError: ServiceErrorConvertible {
    /// A lost connection is 503 `service_unavailable` (retry after 1 s); a statement that ran
    /// past the request's deadline is 504 `deadline_exceeded`; text holding U+0000 is 400
    /// `invalid_field`; anything else is not a client-visible condition (nil: 500).
    public var serviceError: ServiceError? {
        switch kind {
        case .connectionLost:
            ServiceError(.serviceUnavailable, message: "the database is unavailable", status: 503, retryAfter: 1)
        case .statementTimeout:
            ServiceError(.deadlineExceeded, message: "deadline passed in the database", status: 504)
        case .invalidText:
            ServiceError(.invalidField, message: "a text value holds U+0000 (NUL), which is not allowed", status: 400)
        default: nil
        }
    }
}

/// One libpq connection with a prepared-statement cache. Not thread-safe: `Database` confines
/// each connection to one dispatch queue, where libpq's blocking calls run (never on Swift's
/// cooperative pool). Owns its `PGconn`, never hands it out, and closes it in `deinit`.
///
/// Statements are written with `?` placeholders (`?NNN` numbered), rewritten once per text to
/// PostgreSQL's `$n`, and prepared with explicit parameter types taken from the bound values:
/// `int8` for integers, `float8`, `text`, `bytea`; a NULL leaves its type to the server. Results
/// come in text format and are read by column type: integer types as `.int`, `float4`/`float8`
/// as `.double`, `numeric` as `.int` when integral (`SUM` of a `bigint` is `numeric`), `bool`
/// as 0/1, `bytea` as `.blob`, everything else as `.text`.
///
/// When the server goes away, calls fail at once with `PostgresError.Kind.connectionLost`; the
/// next call after a back-off (50 ms doubling to 2 s, cut short as soon as another connection of
/// the process reaches the server) reconnects (`PQreset`, which follows a
/// multi-host URL's `target_session_attrs` to the new primary) and prepares statements anew.
public final class PostgresConnection {
    private var conn: OpaquePointer?
    private let url: String
    private var statements: [String: (name: String, text: String)] = [:]
    private var rewritten: [String: (text: String, count: Int)] = [:]
    private var nextStatement = 0
    private var lastChanges = 0
    private var retryAt: UInt64 = 0
    private var backoffMs: UInt64 = 50
    /// When this connection last failed to reconnect (monotonic ms).
    private var failedAt: UInt64 = 0

    /// The last successful connect or reconnect to each URL in this process (monotonic ms).
    private static let connects = Locked<[String: UInt64]>([:])
    private static func connected(_ url: String) {
        let now = monotonicMs()
        connects.withLock { $0[url] = now }
    }
    private static func lastConnected(_ url: String) -> UInt64 { connects.withLock { $0[url] ?? 0 } }
    /// The `statement_timeout` in force on the session, in ms (0: none).
    private var statementTimeoutMs = 0
    private var inTransaction = false
    /// Whether the session LISTENs (see `listen(_:)`): input while idle may be a notification.
    private var listening = false
    private let maxStatements: Int

    /// Connects to `url` (a libpq connection URI or key-value string), within its
    /// `connect_timeout` (10 s unless it names one).
    /// - Throws: `PostgresError` (`connectionLost`) when no connection could be made.
    /// - Parameter maxStatements: prepared statements kept before all are deallocated (outside
    ///   a transaction) and prepared again as they are used.
    public init(url: String, maxStatements: Int = 1_000) throws {
        self.maxStatements = maxStatements
        self.url = Self.withConnectTimeout(url)
        conn = PQconnectdb(self.url)
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = conn.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(conn)
            conn = nil
            throw PostgresError(sqlState: nil, message: trimmed(message), connectionDead: true)
        }
        Self.connected(self.url)  // the key reconnects use too (with connect_timeout)
        try configureSession()
    }

    deinit { PQfinish(conn) }

    /// `url` with `connect_timeout=10` (seconds) unless it names one: libpq's default is to
    /// wait for ever, so a server that accepts connections and never answers would hang a
    /// service's start (a trial saw 70 s with no message).
    static func withConnectTimeout(_ url: String) -> String {
        guard !url.contains("connect_timeout=") else { return url }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return url + (url.contains("?") ? "&" : "?") + "connect_timeout=10"
        }
        return url + " connect_timeout=10"
    }

    private func configureSession() throws {
        insta_pq_silence_notices(conn)
        statements = [:]
        statementTimeoutMs = 0
        inTransaction = false
        listening = false
        _ = try run("SET client_min_messages = warning; SET TIME ZONE 'UTC'", expectRows: false)
    }

    /// Whether the connection is up (false after the server went away, until a reconnect).
    public var isConnected: Bool { PQstatus(conn) == CONNECTION_OK }

    /// The server process serving this session (`PQbackendPID`): it changes when a dead
    /// connection is replaced, so a holder of session state (an advisory lock, a LISTEN) can
    /// tell that it lost it.
    public var backendPID: Int32 { PQbackendPID(conn) }

    /// The socket's file descriptor (`PQsocket`), to poll for notifications; -1 when none.
    public var socketDescriptor: Int32 { PQsocket(conn) }

    /// `LISTEN channel` on this session (until a reconnect, which starts a new session).
    /// - Throws: `PostgresError`.
    public func listen(_ channel: String) throws {
        try execute("LISTEN \(channel)")
        listening = true
    }

    /// Reads what the server sent and returns the channels of the notifications received
    /// since the last call (`PQconsumeInput`, `PQnotifies`), oldest first.
    /// - Throws: `PostgresError` (`connectionLost`) when the connection is gone.
    public func notifications() throws -> [String] {
        guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else {
            throw PostgresError(
                sqlState: nil, message: trimmed(String(cString: PQerrorMessage(conn))), connectionDead: true)
        }
        var channels: [String] = []
        while let notification = PQnotifies(conn) {
            channels.append(String(cString: notification.pointee.relname))
            PQfreemem(notification)
        }
        return channels
    }

    /// Reconnects when the connection is dead and the back-off allows, else throws at once.
    ///
    /// Outside a transaction a connection the server closed while it was idle (a restart, an
    /// idle-session timeout, a failover) is found before anything is sent on it, by a zero-wait
    /// `poll` for input, and replaced at once: the statement goes to the new connection instead
    /// of failing. Inside a transaction it is never replaced (the transaction is gone: the
    /// statement fails with `connectionLost`).
    private func ensureConnected() throws {
        if PQstatus(conn) == CONNECTION_OK {
            guard !inTransaction else { return }
            var descriptor = pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) > 0 else { return }
            // A listening session's input is mostly notifications: read it (libpq keeps them
            // for `notifications()`); only a connection that is gone is replaced.
            if listening && PQconsumeInput(conn) == 1 && PQstatus(conn) == CONNECTION_OK { return }
            // Input while idle: the error a server sends as it closes the connection (shutdown,
            // idle-session timeout), then end of file. The error can arrive before the end of
            // file, so the connection is replaced on any input (this code never LISTENs: nothing
            // else comes unasked but a rare notice).
            retryAt = 0
            failedAt = 0
        }
        let now = monotonicMs()
        // Within the back-off, unless another connection to the server has connected since
        // this one last failed: the server is back, and waiting out the back-off would only
        // refuse requests it could serve.
        guard now >= retryAt || Self.lastConnected(url) > failedAt else {
            throw PostgresError(sqlState: nil, message: "no connection to the database", connectionDead: true)
        }
        PQreset(conn)
        if PQstatus(conn) == CONNECTION_OK {
            backoffMs = 50
            Self.connected(url)
            try configureSession()
            return
        }
        failedAt = monotonicMs()
        retryAt = now + backoffMs
        backoffMs = min(backoffMs * 2, 2_000)
        throw PostgresError(
            sqlState: nil, message: trimmed(String(cString: PQerrorMessage(conn))), connectionDead: true)
    }

    /// The error a failed result (or a nil one) stands for.
    private func error(_ result: OpaquePointer?, _ sql: String?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let result, let p = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: p)
        }
        let message =
            field("M") ?? (result.map { String(cString: PQresultErrorMessage($0)) }).flatMap { $0.isEmpty ? nil : $0 }
            ?? String(cString: PQerrorMessage(conn))
        let dead = PQstatus(conn) != CONNECTION_OK
        if dead { retryAt = 0 }
        return PostgresError(
            sqlState: field("C"), message: trimmed(message), detail: field("D"), sql: sql, connectionDead: dead)
    }

    /// Runs one or more statements without parameters (schema, SET, savepoints).
    /// - Throws: `PostgresError`.
    public func execute(_ sql: String) throws {
        try ensureConnected()
        _ = try run(sql, expectRows: false)
        track(sql)
    }

    /// Follows BEGIN/COMMIT/ROLLBACK so a reconnect can tell a transaction was lost.
    private func track(_ sql: String) {
        if sql.hasPrefix("BEGIN") { inTransaction = true }
        if sql == "COMMIT" || sql == "ROLLBACK" { inTransaction = false }
    }

    private func run(_ sql: String, expectRows: Bool) throws -> Int {
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard result != nil, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw error(result, sql)
        }
        return Int(PQntuples(result))
    }

    /// Sets the session's statement timeout (ms, 0 for none) when it differs from the one in force.
    /// - Throws: `PostgresError`.
    public func setStatementTimeout(ms: Int) throws {
        guard ms != statementTimeoutMs else { return }
        try ensureConnected()
        _ = try run("SET statement_timeout = \(ms)", expectRows: false)
        statementTimeoutMs = ms
    }

    /// `sql` with `?`/`?NNN` rewritten to `$n`, outside string literals, quoted identifiers and
    /// comments; and the number of parameters.
    static func rewrite(_ sql: String) -> (text: String, count: Int) {
        var out: [UInt8] = []
        out.reserveCapacity(sql.utf8.count + 8)
        let bytes = Array(sql.utf8)
        var i = 0
        var next = 0
        var highest = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "'") || b == UInt8(ascii: "\"") {
                out.append(b)
                i += 1
                while i < bytes.count {
                    out.append(bytes[i])
                    if bytes[i] == b {
                        i += 1
                        break
                    }
                    i += 1
                }
                continue
            }
            if b == UInt8(ascii: "-"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "-") {
                while i < bytes.count && bytes[i] != 10 {
                    out.append(bytes[i])
                    i += 1
                }
                continue
            }
            if b == UInt8(ascii: "?") {
                var j = i + 1
                var number = 0
                while j < bytes.count, (48...57).contains(bytes[j]) {
                    number = number * 10 + Int(bytes[j] - 48)
                    j += 1
                }
                if j == i + 1 {
                    next += 1
                    number = next
                } else {
                    next = max(next, number)
                }
                highest = max(highest, number)
                out += Array("$\(number)".utf8)
                i = j
                continue
            }
            out.append(b)
            i += 1
        }
        return (String(decoding: out, as: UTF8.self), highest)
    }

    /// Type OIDs (pg_type.h): bool 16, bytea 17, int8 20, int2 21, int4 23, text 25, oid 26,
    /// float4 700, float8 701, numeric 1700.
    private enum OID {
        static let bool: UInt32 = 16
        static let bytea: UInt32 = 17
        static let int8: UInt32 = 20
        static let int2: UInt32 = 21
        static let int4: UInt32 = 23
        static let text: UInt32 = 25
        static let oid: UInt32 = 26
        static let float4: UInt32 = 700
        static let float8: UInt32 = 701
        static let numeric: UInt32 = 1700
    }

    /// Prepares (once per text and parameter types) and runs `sql`; `body` reads the result.
    private func withResult<T>(
        _ sql: String, _ params: [any SQLBindable], _ body: (OpaquePointer) throws -> T
    ) throws -> T {
        try ensureConnected()
        let values = params.map(\.sqlValue)
        var signature = sql
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
                rewritten = [:]
            }
            let rewrite = rewritten[sql] ?? Self.rewrite(sql)
            rewritten[sql] = rewrite
            let types: [UInt32] = (0..<rewrite.count).map { i in
                guard i < values.count else { return 0 }
                switch values[i] {
                case .null: return 0
                case .int: return OID.int8
                case .double: return OID.float8
                case .text: return OID.text
                case .blob: return OID.bytea
                }
            }
            nextStatement += 1
            let name = "s\(nextStatement)"
            let result = types.withUnsafeBufferPointer { PQprepare(conn, name, rewrite.text, Int32(types.count), $0.baseAddress) }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw error(result, sql) }
            prepared = (name, rewrite.text)
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
        guard let result else { throw error(nil, sql) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else { throw error(result, sql) }
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

    /// The value at (`row`, `column`) as `SQLValue`, by the column's type.
    private func value(_ result: OpaquePointer, _ row: Int32, _ column: Int32) -> SQLValue {
        if PQgetisnull(result, row, column) != 0 { return .null }
        let raw = PQgetvalue(result, row, column)!
        let length = Int(PQgetlength(result, row, column))
        let bytes = UnsafeRawBufferPointer(start: raw, count: length)
        switch PQftype(result, column) {
        case OID.int8, OID.int4, OID.int2, OID.oid:
            return .int(Self.integer(bytes) ?? 0)
        case OID.float4, OID.float8:
            return .double(Double(String(decoding: bytes, as: UTF8.self)) ?? 0)
        case OID.numeric:
            if let n = Self.integer(bytes) { return .int(n) }
            return .double(Double(String(decoding: bytes, as: UTF8.self)) ?? 0)
        case OID.bool:
            return .int(length > 0 && bytes[0] == UInt8(ascii: "t") ? 1 : 0)
        case OID.bytea:
            return .blob(Self.hexBytea(bytes))
        default:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// A decimal integer in text (optional leading '-'), nil if it is not one or overflows.
    static func integer(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var i = 0
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative { i = 1 }
        guard i < bytes.count else { return nil }
        var n: Int64 = 0
        while i < bytes.count {
            let d = bytes[i]
            guard (48...57).contains(d) else { return nil }
            let (m, o1) = n.multipliedReportingOverflow(by: 10)
            let (s, o2) = negative ? m.subtractingReportingOverflow(Int64(d - 48)) : m.addingReportingOverflow(Int64(d - 48))
            if o1 || o2 { return nil }
            n = s
            i += 1
        }
        return n
    }

    /// A `bytea` in the hex output format (`\x0a1b…`).
    static func hexBytea(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x") else { return Array(bytes) }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: 0
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count - 2) / 2)
        var i = 2
        while i + 1 < bytes.count {
            out.append(nibble(bytes[i]) << 4 | nibble(bytes[i + 1]))
            i += 2
        }
        return out
    }

    private func rows(_ result: OpaquePointer, limit: Int) -> [Row] {
        let count = min(Int(PQntuples(result)), limit)
        let width = PQnfields(result)
        guard count > 0 else { return [] }
        let names = ColumnNames((0..<width).map { String(cString: PQfname(result, $0)) })
        var out: [Row] = []
        out.reserveCapacity(count)
        for r in 0..<Int32(count) {
            out.append(Row(columns: names, values: (0..<width).map { value(result, r, $0) }))
        }
        return out
    }

    /// Runs a statement with parameters and returns all rows.
    /// - Throws: `PostgresError` with the SQL.
    @discardableResult
    public func query(_ sql: String, _ params: [any SQLBindable] = []) throws -> [Row] {
        try withResult(sql, params) { rows($0, limit: .max) }
    }

    /// The first row, or nil.
    /// - Throws: `PostgresError`.
    public func queryOne(_ sql: String, _ params: [any SQLBindable] = []) throws -> Row? {
        try withResult(sql, params) { rows($0, limit: 1).first }
    }

    /// The first column of the first row as an integer, nil for no row or NULL.
    /// - Throws: `PostgresError`; `RowError` when the value is not an integer.
    public func scalar(_ sql: String, _ params: [any SQLBindable] = []) throws -> Int64? {
        try withResult(sql, params) { result in
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
    /// - Throws: `PostgresError`.
    /// A query (`SELECT`) is asked as `SELECT EXISTS (…)`, so the server stops at the first row
    /// instead of sending every row (a fan-out's "followers left?" would read all of them).
    public func exists(_ sql: String, _ params: [any SQLBindable] = []) throws -> Bool {
        let head = sql.prefix(6).uppercased()
        guard head == "SELECT" || head.hasPrefix("WITH") else { return try withResult(sql, params) { PQntuples($0) > 0 } }
        return try scalar("SELECT EXISTS (\(sql))::int AS e", params) == 1
    }

    /// Rows of two integers each (a NULL reads as 0).
    /// - Throws: `PostgresError`.
    public func integerPairs(_ sql: String, _ params: [any SQLBindable] = []) throws -> [(Int64, Int64)] {
        try withResult(sql, params) { result in
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

    /// Runs `body` in a transaction, committing on return, rolling back on throw.
    /// - Throws: what `body` throws, or `PostgresError`.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try inTransaction("BEGIN", body)
    }

    /// Runs `body` in a read-only REPEATABLE READ transaction: one snapshot for all its statements.
    /// - Throws: what `body` throws, or `PostgresError`.
    public func snapshot<T>(_ body: () throws -> T) throws -> T {
        try inTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
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

@available(*, unavailable, message: "PostgresConnection is confined to its Database queue")
extension PostgresConnection: Sendable {}

private func trimmed(_ s: String) -> String {
    var t = Substring(s)
    while let last = t.last, last == "\n" || last == " " { t.removeLast() }
    return String(t)
}

private func monotonicMs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
}

/// An error that stands for a `ServiceError` a client should see (a database that is down is
/// 503, not 500). `ServiceHost` replies with `serviceError` when it is not nil.
public protocol ServiceErrorConvertible: Error {
    /// The reply's error, nil for an internal error (500).
    var serviceError: ServiceError? { get }
}
