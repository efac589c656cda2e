/// A value bound to or read from a statement, in SQLite's five storage classes (PostgreSQL's
/// values are read into the same five: see `PostgresConnection`).
public enum SQLValue: Sendable, Equatable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension SQLValue {
    /// SQLite's name for the value's storage class.
    public var storageClass: String {
        switch self {
        case .null: "NULL"
        case .int: "INTEGER"
        case .double: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}

/// A type whose values can be bound to a statement: interpolated into `SQL`, a value of such a
/// type becomes a bound parameter (never SQL text).
public protocol SQLBindable {
    /// The value as bound: an integer, a double, text, a blob or NULL.
    var sqlValue: SQLValue { get }
}
extension String: SQLBindable { public var sqlValue: SQLValue { .text(self) } }
extension Int: SQLBindable { public var sqlValue: SQLValue { .int(Int64(self)) } }
extension Int64: SQLBindable { public var sqlValue: SQLValue { .int(self) } }
extension Bool: SQLBindable { public var sqlValue: SQLValue { .int(self ? 1 : 0) } }
extension Double: SQLBindable { public var sqlValue: SQLValue { .double(self) } }
extension SQLValue: SQLBindable { public var sqlValue: SQLValue { self } }
extension Optional: SQLBindable where Wrapped: SQLBindable {
    /// NULL for nil.
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
