/// A JSON value as parsed (RFC 8259). Numbers keep their text, so a field decides what range it
/// accepts and a number of any size gets the same answer.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number's text as written, e.g. `-12`, `3.5e2`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The JSON type's name, for messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON object's members in order (each name at most once: the parser refuses duplicates).
public struct JSONObject: Sendable, Equatable {
    public var members: [(name: String, value: JSONValue)]

    public init(members: [(name: String, value: JSONValue)]) { self.members = members }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.members.count == b.members.count && zip(a.members, b.members).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// The member named `name`, or nil when absent.
    public subscript(_ name: String) -> JSONValue? {
        for member in members where member.name == name { return member.value }
        return nil
    }
}

/// Why a body is not JSON; `duplicateName` is set when an object repeats a member name
/// (RFC 8259 §4 leaves that to the receiver; this one refuses it, so no two readers of the same
/// body can disagree about its value).
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// Byte offset where the problem was found.
    public var offset: Int
    public var duplicateName: String?

    public var description: String { "\(message) at byte \(offset)" }
}

/// A strict RFC 8259 parser: UTF-8 only, no trailing commas or comments, no control characters
/// in strings, no lone surrogates, duplicate member names refused, nesting at most `maxDepth`.
public struct JSONParser {
    /// Deepest nesting accepted (arrays and objects).
    public static let maxDepth = 64
    /// Up to this many members an object's names are checked for repeats one by one; past it, in
    /// a set.
    public static let linearNameLimit = 16

    private let bytes: [UInt8]
    private var i = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses one JSON text. - Throws: `JSONParseError`.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        var p = JSONParser(bytes)
        p.skipWhitespace()
        let value = try p.value(depth: 0)
        p.skipWhitespace()
        guard p.i == bytes.count else { throw p.error("unexpected text after the JSON value") }
        return value
    }

    private func error(_ message: String) -> JSONParseError { JSONParseError(message: message, offset: i) }

    private mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0a || bytes[i] == 0x0d || bytes[i] == 0x09 { i += 1 }
    }

    private mutating func value(depth: Int) throws -> JSONValue {
        guard depth <= Self.maxDepth else { throw error("nested deeper than \(Self.maxDepth) levels") }
        guard i < bytes.count else { throw error("unexpected end of the body") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return .object(try object(depth: depth))
        case UInt8(ascii: "["): return .array(try array(depth: depth))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ text: String, _ value: JSONValue) throws -> JSONValue {
        let t = Array(text.utf8)
        guard bytes.count - i >= t.count, bytes[i..<(i + t.count)].elementsEqual(t) else { throw error("unexpected character") }
        i += t.count
        return value
    }

    private mutating func object(depth: Int) throws -> JSONObject {
        i += 1
        var members: [(name: String, value: JSONValue)] = []
        // Duplicate names: a linear look while the object is small (no hashing, the common
        // case on the wire), a set once it is not.
        var names: Set<String>? = nil
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") {
            i += 1
            return JSONObject(members: members)
        }
        while true {
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let start = i
            let name = try string()
            let repeated: Bool
            if members.count < Self.linearNameLimit {
                repeated = members.contains { $0.name == name }
            } else {
                if names == nil { names = Set(members.lazy.map(\.name)) }
                repeated = names?.insert(name).inserted == false
            }
            guard !repeated else {
                throw JSONParseError(message: "duplicate member name", offset: start, duplicateName: name)
            }
            skipWhitespace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
            i += 1
            skipWhitespace()
            members.append((name, try value(depth: depth + 1)))
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of the body") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
            } else if bytes[i] == UInt8(ascii: "}") {
                i += 1
                return JSONObject(members: members)
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws -> [JSONValue] {
        i += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
            return items
        }
        while true {
            skipWhitespace()
            items.append(try value(depth: depth + 1))
            skipWhitespace()
            guard i < bytes.count else { throw error("unexpected end of the body") }
            if bytes[i] == UInt8(ascii: ",") {
                i += 1
            } else if bytes[i] == UInt8(ascii: "]") {
                i += 1
                return items
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func number() throws -> String {
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits() -> Int {
            let s = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            return i - s
        }
        guard i < bytes.count else { throw error("malformed number") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
        } else if digits() == 0 {
            throw error("malformed number")
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { throw error("malformed number") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw error("malformed number") }
        }
        let end = i
        return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) }
    }

    private mutating func string() throws -> String {
        i += 1
        // The common case: no escape before the closing quote. The string is made straight from
        // the body's bytes (checked as UTF-8 unless all ASCII), with no copy in between.
        let start = i
        var ascii = true
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                let end = i
                let text = bytes.withUnsafeBufferPointer { all -> String? in
                    let run = UnsafeBufferPointer(rebasing: all[start..<end])
                    return ascii ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
                }
                guard let text else { throw invalidUTF8(from: start, to: end) }
                i += 1
                return text
            }
            if b < 0x20 || b == UInt8(ascii: "\\") { break }
            if b >= 0x80 { ascii = false }
            i += 1
        }
        i = start
        return try escapedString()
    }

    /// The error for a string whose raw bytes `start..<end` (between its quotes) are not UTF-8,
    /// at the offset of the first byte that does not begin or continue a valid sequence.
    ///
    /// The raw bytes are scanned, not the decoded text: escapes are ASCII, so a string's decoded
    /// text is invalid exactly when its raw bytes are, and the raw offset is the one a client can
    /// find in its body.
    private func invalidUTF8(from start: Int, to end: Int) -> JSONParseError {
        var offset = start
        bytes.withUnsafeBufferPointer { all in
            var parser = Unicode.UTF8.ForwardParser()
            var input = UnsafeBufferPointer(rebasing: all[start..<end]).makeIterator()
            while true {
                switch parser.parseScalar(from: &input) {
                case .valid(let scalar): offset += scalar.count
                case .error: return
                case .emptyInput: return
                }
            }
        }
        return JSONParseError(message: "a string is not valid UTF-8", offset: offset)
    }

    /// A string with escapes (the opening quote already read): decoded into a buffer first.
    private mutating func escapedString() throws -> String {
        let start = i
        var out: [UInt8] = []
        var plainStart = i
        while true {
            guard i < bytes.count else { throw error("unterminated string") }
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                out += bytes[plainStart..<i]
                i += 1
                break
            }
            if b < 0x20 { throw error("control character in a string (escape it)") }
            if b != UInt8(ascii: "\\") {
                i += 1
                continue
            }
            out += bytes[plainStart..<i]
            i += 1
            guard i < bytes.count else { throw error("unterminated string") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5c)
            case UInt8(ascii: "/"): out.append(0x2f)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0c)
            case UInt8(ascii: "n"): out.append(0x0a)
            case UInt8(ascii: "r"): out.append(0x0d)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw error("lone surrogate in a \\u escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw error("lone surrogate in a \\u escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw error("lone surrogate in a \\u escape")
                }
                out += Array(String(Character(Unicode.Scalar(scalar)!)).utf8)
            default:
                throw error("invalid escape in a string")
            }
            plainStart = i
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw invalidUTF8(from: start, to: i - 1) }
        return text
    }

    private mutating func hex4() throws -> UInt32 {
        guard bytes.count - i >= 4 else { throw error("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            let d: UInt32
            switch b {
            case 0x30...0x39: d = UInt32(b - 0x30)
            case 0x41...0x46: d = UInt32(b - 0x41 + 10)
            case 0x61...0x66: d = UInt32(b - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            v = v * 16 + d
            i += 1
        }
        return v
    }
}
