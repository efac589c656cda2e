/// An error from the database, on either engine (the shape of GRDB's `DatabaseError`): a
/// `kind` that callers branch on, the constraint a unique violation broke, and the engine's own
/// facts (SQLite's extended result code, PostgreSQL's SQLSTATE, message, detail and the SQL).
///
/// Stores branch on `kind` and `constraint`, never on the message. No HTTP status is chosen
/// here: the service host maps kinds to replies (`ServiceHost`: a lost connection is 503, a
/// timeout 504, text the engine cannot hold 400, anything else 500).
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// What a caller may do about an error.
    public enum Kind: Sendable, Equatable, CaseIterable {
        /// A UNIQUE or PRIMARY KEY constraint (or unique index) refused a row: SQLite's
        /// SQLITE_CONSTRAINT_UNIQUE (2067) or SQLITE_CONSTRAINT_PRIMARYKEY (1555), PostgreSQL's
        /// 23505 `unique_violation`. `constraint` names it.
        case uniqueViolation
        /// PostgreSQL's 40P01 `deadlock_detected`: this transaction was rolled back and may run again.
        case deadlock
        /// PostgreSQL's 40001 `serialization_failure`: the transaction may run again.
        case serializationFailure
        /// A statement ran past the time it had: PostgreSQL's 57014 `query_canceled` (the
        /// `statement_timeout` a request's deadline sets).
        case timeout
        /// A lock could not be had in time: SQLite's SQLITE_BUSY or SQLITE_LOCKED (and their
        /// extended codes) after the busy timeout, PostgreSQL's 55P03 `lock_not_available`.
        case busy
        /// The connection is gone (server restart, network) or could not be made: libpq reports
        /// no SQLSTATE on a dead connection, class 08 `connection_exception`, or 57P01…57P03 (the
        /// server is shutting down or starting).
        case connectionLost
        /// A text value the engine cannot hold: PostgreSQL's 22021 `character_not_in_repertoire`
        /// for U+0000 (SQLite stores it; a lookup key holding one reaches a store unvalidated).
        case invalidText
        /// Anything else (a syntax error, another constraint, a full disk, ...).
        case other
    }

    /// What a caller may do about it.
    public var kind: Kind
    /// The engine that reported it.
    public var engine: StorageEngine
    /// For `uniqueViolation`: the constraint or unique index, by the name PostgreSQL gives it
    /// (`PG_DIAG_CONSTRAINT_NAME`). SQLite reports a table's columns instead, and the name is
    /// found from them: the unique index's own name, `<table>_pkey` for a primary key and
    /// `<table>_<columns>_key` for a column's `UNIQUE`, PostgreSQL's default names.
    public var constraint: String?
    /// SQLite's extended result code (nil on PostgreSQL).
    public var resultCode: SQLiteResultCode?
    /// PostgreSQL's five-character SQLSTATE (nil on SQLite, and when libpq failed before the
    /// server answered).
    public var sqlState: String?
    /// The engine's message.
    public var message: String
    /// PostgreSQL's detail (e.g. the key that was taken), nil when none.
    public var detail: String?
    /// The statement's text as the engine ran it, nil when the error came from no statement
    /// (opening a connection).
    public var sql: String?

    /// An error of `kind` from `engine`, with what the engine reported (see the properties).
    public init(
        kind: Kind, engine: StorageEngine, constraint: String? = nil, resultCode: SQLiteResultCode? = nil,
        sqlState: String? = nil, message: String, detail: String? = nil, sql: String? = nil
    ) {
        self.kind = kind
        self.engine = engine
        self.constraint = constraint
        self.resultCode = resultCode
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.sql = sql
    }

    /// Whether running the whole transaction again may succeed: a deadlock or a serialization
    /// failure, races between replicas writing the same rows in different orders.
    public var isTransient: Bool { kind == .deadlock || kind == .serializationFailure }

    public var description: String {
        var text: String
        switch engine {
        case .sqlite: text = "SQLite error \(resultCode.map { "\($0)" } ?? "?"): \(message)"
        case .postgres: text = (sqlState.map { "PostgreSQL error \($0): " } ?? "PostgreSQL connection error: ") + message
        }
        if let detail { text += " (\(detail))" }
        if let sql { text += " [\(sql)]" }
        return text
    }
}
