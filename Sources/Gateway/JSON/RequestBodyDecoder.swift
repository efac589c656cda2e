import Wire

/// Decodes a request body (a JSON object from the strict parser, `JSONBody`) into a `Decodable`
/// type, strictly: the one place where request bodies are checked for shape. Every error is a
/// `Problem` naming the member (a nested one as `outer.inner`), never a `DecodingError`:
///
/// - a member the type's coding keys do not name is 400 `unknown_field`, the first such member in
///   the body's order, before any member is read (a type that takes any name reads its members
///   with `MemberName` keys);
/// - a missing required member is 400 `invalid_field` with the field code `required`; so is
///   `null` for a required boolean or number, while `null` for a required string "must be a
///   string";
/// - a member of the wrong type is 400 `invalid_field`: "must be a string", "must be true or
///   false", "must be an array of strings", "must be an integer from min to max" (the type's
///   range; a fraction or an exponent is not an integer), "must be a number", "must be an
///   object", "must be an array";
/// - an absent or `null` member decodes as a nil optional.
///
/// The wire format's decoder (`JSONValueDecoder`) is the lenient one: it ignores unknown members,
/// so an older service reads a newer one's messages.
enum RequestBodyDecoder {
    /// Decodes `type` from a body's object.
    /// - Throws: `Problem` 400 (`unknown_field`, `invalid_field`), or what `type` throws.
    static func decode<T: Decodable>(_ type: T.Type, from object: JSONObject) throws -> T {
        try T(from: BodyDecoder(value: .object(object), codingPath: []))
    }

    /// The name errors give the member at `path`: its keys joined by `.` (`push.like`).
    static func fieldName(_ path: [any CodingKey]) -> String {
        path.map(\.stringValue).joined(separator: ".")
    }

    /// The name of member `name` of the object at `path`.
    static func fieldName(_ path: [any CodingKey], _ name: String) -> String {
        path.isEmpty ? name : fieldName(path) + "." + name
    }
}

extension KeyedDecodingContainer {
    /// A required integer in `range`: one answer for a fraction, an exponent, another type or a
    /// number of any size outside the range (the strict decoder's answers otherwise).
    /// - Throws: `Problem` 400 `invalid_field` naming the member: `required` when it is absent or
    ///   `null`, else "must be an integer from `lower` to `upper`".
    func decode(_ type: Int64.Type, forKey key: Key, in range: ClosedRange<Int64>) throws -> Int64 {
        let name = RequestBodyDecoder.fieldName(codingPath, key.stringValue)
        guard contains(key), try !decodeNil(forKey: key) else {
            throw Problem.invalidField(name, "is required", code: .required)
        }
        guard let n = try? decode(Int64.self, forKey: key), range.contains(n) else {
            throw Problem.invalidField(name, "must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }
}

/// What a value must be, in the words of the error that says it is not.
private enum Expected {
    static let string = "a string"
    static let bool = "true or false"
    static let strings = "an array of strings"
    static let number = "a number"
    static let object = "an object"
    static let array = "an array"
    static func integer<I: FixedWidthInteger>(_ type: I.Type) -> String { "an integer from \(I.min) to \(I.max)" }
}

/// Reads primitives out of values, with the decoder's answers. The field name is built only
/// for an error.
private enum Read {
    static func required(_ field: @autoclosure () -> String) -> Problem {
        Problem.invalidField(field(), "is required", code: .required)
    }
    static func wrong(_ field: @autoclosure () -> String, _ expected: String) -> Problem {
        Problem.invalidField(field(), "must be \(expected)")
    }
    static func string(_ v: JSONValue, _ field: @autoclosure () -> String) throws -> String {
        guard case .string(let s) = v else { throw wrong(field(), Expected.string) }
        return s
    }
    static func bool(_ v: JSONValue, _ field: @autoclosure () -> String) throws -> Bool {
        switch v {
        case .bool(let b): return b
        case .null: throw required(field())
        default: throw wrong(field(), Expected.bool)
        }
    }
    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ v: JSONValue, _ field: @autoclosure () -> String) throws -> I {
        switch v {
        case .number(let text):
            guard let n = I(text) else { throw wrong(field(), Expected.integer(type)) }
            return n
        case .null: throw required(field())
        default: throw wrong(field(), Expected.integer(type))
        }
    }
    static func double(_ v: JSONValue, _ field: @autoclosure () -> String) throws -> Double {
        switch v {
        case .number(let text):
            guard let d = Double(text), d.isFinite else { throw wrong(field(), Expected.number) }
            return d
        case .null: throw required(field())
        default: throw wrong(field(), Expected.number)
        }
    }
    static func strings(_ v: JSONValue, _ field: @autoclosure () -> String) throws -> [String] {
        guard case .array(let items) = v else { throw wrong(field(), Expected.strings) }
        return try items.map {
            guard case .string(let s) = $0 else { throw wrong(field(), Expected.strings) }
            return s
        }
    }
}

private struct BodyDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else {
            throw Read.wrong(RequestBodyDecoder.fieldName(codingPath), Expected.object)
        }
        return KeyedDecodingContainer(try BodyKeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            throw Read.wrong(RequestBodyDecoder.fieldName(codingPath), Expected.array)
        }
        return BodyUnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        BodySingleValueContainer(value: value, codingPath: codingPath)
    }
}

/// An object's members by key; absent and `null` members are nil for `decodeIfPresent` (the
/// standard library's default, through `contains` and `decodeNil`).
private struct BodyKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]

    /// - Throws: 400 `unknown_field` for the first member `Key` does not name.
    init(object: JSONObject, codingPath: [any CodingKey]) throws {
        for member in object.members where Key(stringValue: member.name) == nil {
            throw Problem.unknownField(RequestBodyDecoder.fieldName(codingPath, member.name))
        }
        self.object = object
        self.codingPath = codingPath
    }

    var allKeys: [Key] { object.members.compactMap { Key(stringValue: $0.name) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func field(_ key: Key) -> String { RequestBodyDecoder.fieldName(codingPath, key.stringValue) }

    private func value(_ key: Key) throws -> JSONValue {
        guard let v = object[key.stringValue] else { throw Read.required(field(key)) }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Read.bool(try value(key), field(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try Read.string(try value(key), field(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Read.double(try value(key), field(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try Read.double(try value(key), field(key))) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try Read.integer(type, try value(key), field(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try Read.integer(type, try value(key), field(key)) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let v = try value(key)
        // Arrays of strings (tags) are the only arrays bodies carry: one answer for the array
        // and its items.
        if T.self == [String].self, let strings = try Read.strings(v, field(key)) as? T { return strings }
        return try T(from: BodyDecoder(value: v, codingPath: codingPath + [key]))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try BodyDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try BodyDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        BodyDecoder(value: .object(object), codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        BodyDecoder(value: try value(key), codingPath: codingPath + [key])
    }
}

/// An array's items in order; an item is named `array.index` in errors.
private struct BodyUnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private struct Index: CodingKey {
        var intValue: Int?
        var stringValue: String { "\(intValue ?? 0)" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    private func field() -> String { RequestBodyDecoder.fieldName(codingPath + [Index(currentIndex)]) }

    /// The next item. - Throws: 400 `invalid_field` naming the array when there is none.
    private mutating func next() throws -> JSONValue {
        guard !isAtEnd else { throw Read.required(field()) }
        defer { currentIndex += 1 }
        return items[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let name = field()
        return try Read.bool(try next(), name)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let name = field()
        return try Read.string(try next(), name)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let name = field()
        return try Read.double(try next(), name)
    }
    mutating func decode(_ type: Int.Type) throws -> Int {
        let name = field()
        return try Read.integer(type, try next(), name)
    }
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        let name = field()
        return try Read.integer(type, try next(), name)
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = codingPath + [Index(currentIndex)]
        return try T(from: BodyDecoder(value: try next(), codingPath: path))
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let path = codingPath + [Index(currentIndex)]
        return try BodyDecoder(value: try next(), codingPath: path).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let path = codingPath + [Index(currentIndex)]
        return try BodyDecoder(value: try next(), codingPath: path).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        let path = codingPath + [Index(currentIndex)]
        return BodyDecoder(value: try next(), codingPath: path)
    }
}

/// One value, for types that decode themselves from a single value.
private struct BodySingleValueContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    private var field: String { RequestBodyDecoder.fieldName(codingPath) }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Read.bool(value, field) }
    func decode(_ type: String.Type) throws -> String { try Read.string(value, field) }
    func decode(_ type: Double.Type) throws -> Double { try Read.double(value, field) }
    func decode(_ type: Float.Type) throws -> Float { Float(try Read.double(value, field)) }
    func decode(_ type: Int.Type) throws -> Int { try Read.integer(type, value, field) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Read.integer(type, value, field) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Read.integer(type, value, field) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Read.integer(type, value, field) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Read.integer(type, value, field) }
    func decode(_ type: UInt.Type) throws -> UInt { try Read.integer(type, value, field) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Read.integer(type, value, field) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Read.integer(type, value, field) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Read.integer(type, value, field) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Read.integer(type, value, field) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == [String].self, let strings = try Read.strings(value, field) as? T { return strings }
        return try T(from: BodyDecoder(value: value, codingPath: codingPath))
    }
}
