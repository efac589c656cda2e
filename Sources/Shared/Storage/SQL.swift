/// A statement and the values bound to it, written by string interpolation as postgres-nio's
/// `PostgresQuery` is: a value interpolated into it becomes a bound parameter, never SQL text.
///
/// ```swift
/// let page: SQL = "SELECT seq FROM notifications WHERE recipient = \(recipient) AND seq < \(before) LIMIT \(limit)"
/// // SQLite:     SELECT seq FROM notifications WHERE recipient = ?1 AND seq < ?2 LIMIT ?3
/// // PostgreSQL: SELECT seq FROM notifications WHERE recipient = $1 AND seq < $2 LIMIT $3
/// ```
///
/// What an interpolation adds:
/// - `\(value)` for any `SQLBindable` (`String`, `Int`, `Int64`, `Bool`, `Double`, `SQLValue`, and
///   their optionals, nil binding NULL): one bound parameter. A `String` interpolated by mistake
///   is therefore a value, never text.
/// - `\(fragment)` for another `SQL`: its text and its parameters, spliced (a subquery, a
///   condition built elsewhere, a dialect fragment such as `SQL.greatest`).
/// - `\(list: values)`: one parameter per value, separated by commas (`IN (\(list: ids))`).
/// - `\(literal: 5)`: an integer written into the text (a constant a partial index names, which
///   a parameter would not match).
/// - `\(unescaped: text)`: `text` as SQL, the one explicit way to splice a string (an identifier
///   chosen from a fixed set).
///
/// Each engine renders its own placeholders (SQLite `?NNN`, PostgreSQL `$n`, numbered in order)
/// and picks its side of every dialect fragment (`SQL+Dialect.swift`). Rendering happens only
/// when an engine prepares a statement it has not seen: its statement cache is keyed by
/// `source`, which is the same for every call of one statement whatever its values, so building
/// a statement costs one string of its length and the array of its values.
public struct SQL: Sendable, Equatable {
    /// The statement in the form both engines render from: its text, with `Marker.placeholder`
    /// where a value is bound and `Marker.sqlite` … `Marker.postgres` … `Marker.end` around text
    /// that differs between the engines.
    private(set) var source: String
    /// The bound values, in the order of their placeholders.
    public private(set) var binds: [SQLValue]
    /// Whether `source` holds no marker (no parameter, no dialect choice): it is then the text
    /// on both engines as it stands.
    private(set) var isPlain: Bool

    /// The bytes that mark parameters and dialect choices in `source`: control characters that
    /// SQL text never holds (checked in debug builds as literals are appended).
    /// (`dialect(sqlite:postgres:)` and `appendBind` write them as string literals.)
    enum Marker {
        static let placeholder: UInt8 = 1
        static let sqlite: UInt8 = 2
        static let postgres: UInt8 = 3
        static let end: UInt8 = 4
    }

    private init(source: String, binds: [SQLValue], isPlain: Bool) {
        self.source = source
        self.binds = binds
        self.isPlain = isPlain
    }

    /// `text` spliced as SQL as it is: for an identifier or keyword chosen from a fixed set at
    /// run time. Never pass a value here (interpolate it instead: it is then bound).
    public init(unescaped text: String) {
        assert(Self.holdsNoMarker(text), "SQL text holds a control character U+0001…U+0004")
        self.init(source: text, binds: [], isPlain: true)
    }

    /// A fragment whose text differs between the engines (no parameters), e.g. `GREATEST` for
    /// SQLite's two-argument `MAX`. The named fragments in `SQL+Dialect.swift` cover the
    /// differences the stores meet; this is for storage code with one of its own.
    public static func dialect(sqlite: String, postgres: String) -> SQL {
        assert(Self.holdsNoMarker(sqlite) && Self.holdsNoMarker(postgres), "SQL text holds a control character")
        return SQL(source: "\u{2}" + sqlite + "\u{3}" + postgres + "\u{4}", binds: [], isPlain: false)
    }

    /// The statement's text on `engine`: placeholders numbered in order (`?1` on SQLite, `$1` on
    /// PostgreSQL), each dialect fragment's side for the engine.
    public func text(for engine: StorageEngine) -> String {
        isPlain ? source : Self.render(source, for: engine)
    }

    /// Whether the statement has no text on `engine` (a fragment for the other engine only).
    func isEmpty(on engine: StorageEngine) -> Bool {
        isPlain ? source.isEmpty : text(for: engine).isEmpty
    }

    /// Appends `other`'s text and parameters.
    public mutating func append(_ other: SQL) {
        source += other.source
        if !other.binds.isEmpty { binds += other.binds }
        isPlain = isPlain && other.isPlain
    }

    /// `lhs` followed by `rhs`.
    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var sum = lhs
        sum.append(rhs)
        return sum
    }

    private mutating func appendBind(_ value: SQLValue) {
        source += "\u{1}"  // Marker.placeholder
        binds.append(value)
        isPlain = false
    }

    /// `source` rendered for `engine` (see `text(for:)`).
    static func render(_ source: String, for engine: StorageEngine) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(source.utf8.count + 16)
        var number = 0
        var keep = true
        for byte in source.utf8 {
            switch byte {
            case Marker.placeholder:
                number += 1
                out.append(engine == .sqlite ? UInt8(ascii: "?") : UInt8(ascii: "$"))
                appendDecimal(number, to: &out)
            case Marker.sqlite: keep = engine == .sqlite
            case Marker.postgres: keep = engine == .postgres
            case Marker.end: keep = true
            default: if keep { out.append(byte) }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func appendDecimal(_ n: Int, to out: inout [UInt8]) {
        if n >= 10 { appendDecimal(n / 10, to: &out) }
        out.append(UInt8(ascii: "0") + UInt8(n % 10))
    }

    static func holdsNoMarker(_ text: String) -> Bool {
        !text.utf8.contains { (Marker.placeholder...Marker.end).contains($0) }
    }

    /// Whether a literal part of a statement is free of markers and of `?` outside quotes and
    /// comments: a `?` there is a placeholder written the old way, whose value is missing.
    static func isCleanLiteral(_ text: String) -> Bool {
        var quote: UInt8? = nil
        var previous: UInt8 = 0
        var comment = false
        for byte in text.utf8 {
            if (Marker.placeholder...Marker.end).contains(byte) { return false }
            if comment {
                if byte == UInt8(ascii: "\n") { comment = false }
            } else if let q = quote {
                if byte == q { quote = nil }
            } else if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\"") {
                quote = byte
            } else if byte == UInt8(ascii: "-") && previous == UInt8(ascii: "-") {
                comment = true
            } else if byte == UInt8(ascii: "?") {
                return false
            }
            previous = byte
        }
        return true
    }
}

extension SQL: ExpressibleByStringInterpolation {
    /// A statement without parameters.
    public init(stringLiteral value: String) {
        assert(Self.isCleanLiteral(value), "a `?` or a control character in SQL text: interpolate values instead")
        self.init(source: value, binds: [], isPlain: true)
    }

    /// The statement a string literal with interpolations built.
    public init(stringInterpolation: StringInterpolation) {
        self = stringInterpolation.sql
    }

    /// Builds an `SQL` from a string literal with interpolations (see `SQL` for what each adds).
    public struct StringInterpolation: StringInterpolationProtocol {
        var sql: SQL

        /// Reserves room for `literalCapacity` bytes of text and `interpolationCount` values.
        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = SQL(source: "", binds: [], isPlain: true)
            sql.source.reserveCapacity(literalCapacity + 2 * interpolationCount)
            sql.binds.reserveCapacity(interpolationCount)
        }

        /// The literal's text, as it is (debug builds check it holds no `?` placeholder).
        public mutating func appendLiteral(_ literal: String) {
            assert(SQL.isCleanLiteral(literal), "a `?` or a control character in SQL text: interpolate values instead")
            sql.source += literal
        }

        /// A bound parameter holding `value` (NULL for nil).
        public mutating func appendInterpolation<T: SQLBindable>(_ value: T) {
            sql.appendBind(value.sqlValue)
        }

        /// A bound parameter holding `value`, NULL for nil (the overload for optionals: the
        /// generic one above takes them too, but draws the compiler's warning about
        /// interpolating an optional).
        public mutating func appendInterpolation<T: SQLBindable>(_ value: T?) {
            sql.appendBind(value.sqlValue)
        }

        /// Another statement's text and parameters, spliced.
        public mutating func appendInterpolation(_ fragment: SQL) {
            sql.append(fragment)
        }

        /// One parameter per value, separated by `, ` (nothing for none).
        public mutating func appendInterpolation<C: Collection>(list values: C) where C.Element: SQLBindable {
            var first = true
            for value in values {
                if !first { sql.source += ", " }
                first = false
                sql.appendBind(value.sqlValue)
            }
        }

        /// An integer written into the text as a decimal literal.
        public mutating func appendInterpolation<I: BinaryInteger>(literal value: I) {
            sql.source += String(value)
        }

        /// `text` spliced as SQL as it is (see `SQL.init(unescaped:)`).
        public mutating func appendInterpolation(unescaped text: String) {
            sql.append(SQL(unescaped: text))
        }
    }
}

extension Sequence where Element == SQL {
    /// The statements' texts one after the other with `separator` between them, and their
    /// parameters in the same order.
    public func joined(separator: SQL = "") -> SQL {
        var out: SQL = ""
        var first = true
        for sql in self {
            if !first { out.append(separator) }
            first = false
            out.append(sql)
        }
        return out
    }
}
