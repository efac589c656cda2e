import CLibPQ

/// PostgreSQL's errors as `DatabaseError`s: SQLSTATE (PostgreSQL documentation, Appendix A
/// "PostgreSQL Error Codes") to kind, the constraint from `Field.constraint`.
extension PostgresConnection {
    /// The error a failed result (or a nil one) stands for; `sql` is the statement's text.
    func error(_ result: OpaquePointer?, sql: String?) -> DatabaseError {
        func field(_ code: Character) -> String? {
            guard let result, let p = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: p)
        }
        let message =
            field(Field.message)
            ?? (result.map { String(cString: PQresultErrorMessage($0)) }).flatMap { $0.isEmpty ? nil : $0 }
            ?? String(cString: PQerrorMessage(conn))
        let dead = PQstatus(conn) != CONNECTION_OK
        if dead { retryAt = 0 }
        let sqlState = field(Field.sqlState)
        let kind = Self.kind(sqlState: sqlState, connectionDead: dead)
        return DatabaseError(
            kind: kind, engine: .postgres, constraint: kind == .uniqueViolation ? field(Field.constraint) : nil,
            sqlState: sqlState, message: trimmed(message), detail: field(Field.detail), sql: sql)
    }

    /// The error fields read (`PG_DIAG_*` in postgres_ext.h, character macros Swift does not
    /// import).
    enum Field {
        /// PG_DIAG_SQLSTATE.
        static let sqlState: Character = "C"
        /// PG_DIAG_MESSAGE_PRIMARY.
        static let message: Character = "M"
        /// PG_DIAG_MESSAGE_DETAIL.
        static let detail: Character = "D"
        /// PG_DIAG_CONSTRAINT_NAME.
        static let constraint: Character = "n"
    }

    /// What an error with `sqlState` (nil: libpq failed before the server answered) on a
    /// connection found dead or alive stands for.
    static func kind(sqlState: String?, connectionDead: Bool) -> DatabaseError.Kind {
        switch sqlState {
        case "23505": .uniqueViolation
        case "40001": .serializationFailure
        case "40P01": .deadlock
        case "57014": .timeout
        case "55P03": .busy
        case "22021": .invalidText
        case "57P01", "57P02", "57P03": .connectionLost
        case let s? where s.hasPrefix("08"): .connectionLost
        default: connectionDead ? .connectionLost : .other
        }
    }

    /// The error of a connection that could not be made or is gone.
    static func connectionLost(_ message: String) -> DatabaseError {
        DatabaseError(kind: .connectionLost, engine: .postgres, message: trimmed(message))
    }
}
