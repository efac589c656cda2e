/// The column names of one statement's result, shared by all its rows.
public final class ColumnNames: Sendable {
    /// Names as SQLite reports them (`sqlite3_column_name`: the alias after `AS`, else the column).
    public let names: [String]

    init(_ names: [String]) { self.names = names }

    /// The index of `name`, or nil. Result sets are narrow (a dozen columns), so a scan of
    /// short strings beats hashing.
    func index(of name: String) -> Int? { names.firstIndex(of: name) }
}

/// Why a column could not be read as asked.
public struct RowError: Error, CustomStringConvertible, Sendable {
    public enum Problem: Sendable, Equatable {
        /// The statement has no column of that name (a programming error in the store).
        case noSuchColumn
        /// The value is NULL where the store expected one.
        case unexpectedNull
        /// The value has another SQLite storage class than the one asked for.
        case typeMismatch(String)
    }
    /// The column name asked for.
    public var column: String
    public var problem: Problem

    public var description: String {
        switch problem {
        case .noSuchColumn: "no column \(column) in the result"
        case .unexpectedNull: "column \(column) is NULL"
        case .typeMismatch(let found): "column \(column) holds \(found)"
        }
    }
}

/// One result row, read by column name, as GRDB does: a non-optional accessor throws on NULL
/// (`RowError.unexpectedNull`) instead of turning it into 0 or "", and the `optional…`
/// accessors return nil for NULL.
public struct Row: Sendable {
    public let columns: ColumnNames
    public let values: [SQLValue]

    /// The raw value of `column`.
    /// - Throws: `RowError.noSuchColumn`.
    public func value(_ column: String) throws -> SQLValue {
        guard let i = columns.index(of: column) else { throw RowError(column: column, problem: .noSuchColumn) }
        return values[i]
    }

    /// A TEXT value. - Throws: `RowError` for NULL, another type or a missing column.
    public func string(_ column: String) throws -> String {
        guard let s = try optionalString(column) else { throw RowError(column: column, problem: .unexpectedNull) }
        return s
    }

    /// A TEXT value, or nil for NULL. - Throws: `RowError` for another type or a missing column.
    public func optionalString(_ column: String) throws -> String? {
        switch try value(column) {
        case .null: return nil
        case .text(let s): return s
        case let other: throw RowError(column: column, problem: .typeMismatch(other.storageClass))
        }
    }

    /// An INTEGER value. - Throws: `RowError` for NULL, another type or a missing column.
    public func int64(_ column: String) throws -> Int64 {
        guard let v = try optionalInt64(column) else { throw RowError(column: column, problem: .unexpectedNull) }
        return v
    }

    /// An INTEGER value, or nil for NULL. - Throws: `RowError` for another type or a missing column.
    public func optionalInt64(_ column: String) throws -> Int64? {
        switch try value(column) {
        case .null: return nil
        case .int(let v): return v
        case let other: throw RowError(column: column, problem: .typeMismatch(other.storageClass))
        }
    }

    /// An INTEGER value as `Int`. - Throws: as `int64(_:)`.
    public func int(_ column: String) throws -> Int { Int(try int64(column)) }

    /// An INTEGER 0/1 as a Bool. - Throws: as `int64(_:)`.
    public func bool(_ column: String) throws -> Bool { try int64(column) != 0 }

    /// A BLOB value. - Throws: `RowError` for NULL, another type or a missing column.
    public func blob(_ column: String) throws -> [UInt8] {
        switch try value(column) {
        case .blob(let b): return b
        case .null: throw RowError(column: column, problem: .unexpectedNull)
        case let other: throw RowError(column: column, problem: .typeMismatch(other.storageClass))
        }
    }
}

/// A type built from one row (GRDB's `FetchableRecord`).
public protocol RowDecodable {
    /// - Throws: `RowError` when a column is missing, NULL where not allowed, or of another type.
    init(row: Row) throws
}
