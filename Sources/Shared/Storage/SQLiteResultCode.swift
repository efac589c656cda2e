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
