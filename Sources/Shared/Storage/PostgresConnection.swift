import CLibPQ
import Glibc
import Support

/// One libpq connection with a prepared-statement cache. Not thread-safe: `Database` confines
/// each connection to one dispatch queue, where libpq's blocking calls run (never on Swift's
/// cooperative pool). Owns its `PGconn`, never hands it out, and closes it in `deinit`.
///
/// Statements are `SQL` values rendered with PostgreSQL's `$n` placeholders, prepared once per
/// statement and parameter types, with explicit parameter types taken from the bound values:
/// `int8` for integers, `float8`, `text`, `bytea`; a NULL leaves its type to the server. Results
/// come in text format and are read by column type: integer types as `.int`, `float4`/`float8`
/// as `.double`, `numeric` as `.int` when integral (`SUM` of a `bigint` is `numeric`), `bool`
/// as 0/1, `bytea` as `.blob`, everything else as `.text`.
///
/// When the server goes away, calls fail at once with `DatabaseError.Kind.connectionLost`; the
/// next call after a back-off (50 ms doubling to 2 s, cut short as soon as another connection of
/// the process reaches the server) reconnects (`PQreset`, which follows a
/// multi-host URL's `target_session_attrs` to the new primary) and prepares statements anew.
public final class PostgresConnection {
    // Internal, not private: the extensions in `PostgresConnection+*.swift` use them.
    var conn: OpaquePointer?
    private let url: String
    /// Prepared statements by `SQL.source` and parameter types: name and text.
    var statements: [String: (name: String, text: String)] = [:]
    var nextStatement = 0
    var lastChanges = 0
    var retryAt: UInt64 = 0
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
    var inTransaction = false
    /// Whether the session LISTENs (see `listen(_:)`): input while idle may be a notification.
    private var listening = false
    let maxStatements: Int

    /// Connects to `url` (a libpq connection URI or key-value string), within its
    /// `connect_timeout` (10 s unless it names one).
    /// - Throws: `DatabaseError` (`connectionLost`) when no connection could be made.
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
            throw Self.connectionLost(message)
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
    /// - Throws: `DatabaseError`.
    public func listen(_ channel: String) throws {
        try execute(SQL(unescaped: "LISTEN \(channel)"))
        listening = true
    }

    /// Reads what the server sent and returns the channels of the notifications received
    /// since the last call (`PQconsumeInput`, `PQnotifies`), oldest first.
    /// - Throws: `DatabaseError` (`connectionLost`) when the connection is gone.
    public func notifications() throws -> [String] {
        guard PQconsumeInput(conn) == 1, PQstatus(conn) == CONNECTION_OK else {
            throw Self.connectionLost(String(cString: PQerrorMessage(conn)))
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
    func ensureConnected() throws {
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
            throw Self.connectionLost("no connection to the database")
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
        throw Self.connectionLost(String(cString: PQerrorMessage(conn)))
    }

    /// Runs one or more statements without parameters (schema, SET, savepoints); nothing when
    /// `sql` has no text on PostgreSQL.
    /// - Throws: `DatabaseError`.
    public func execute(_ sql: SQL) throws {
        precondition(sql.binds.isEmpty, "execute runs statements without parameters: use query")
        let text = sql.text(for: .postgres)
        if text.isEmpty { return }
        try ensureConnected()
        _ = try run(text, expectRows: false)
        track(text)
    }

    /// Follows BEGIN/COMMIT/ROLLBACK so a reconnect can tell a transaction was lost.
    private func track(_ sql: String) {
        if sql.hasPrefix("BEGIN") { inTransaction = true }
        if sql == "COMMIT" || sql == "ROLLBACK" { inTransaction = false }
    }

    func run(_ sql: String, expectRows: Bool) throws -> Int {
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard result != nil, status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw error(result, sql: sql)
        }
        return Int(PQntuples(result))
    }

    /// Sets the session's statement timeout (ms, 0 for none) when it differs from the one in force.
    /// - Throws: `DatabaseError`.
    public func setStatementTimeout(ms: Int) throws {
        guard ms != statementTimeoutMs else { return }
        try ensureConnected()
        _ = try run("SET statement_timeout = \(ms)", expectRows: false)
        statementTimeoutMs = ms
    }
}

@available(*, unavailable, message: "PostgresConnection is confined to its Database queue")
extension PostgresConnection: Sendable {}

func trimmed(_ s: String) -> String {
    var t = Substring(s)
    while let last = t.last, last == "\n" || last == " " { t.removeLast() }
    return String(t)
}

private func monotonicMs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
}
