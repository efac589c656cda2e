/// Decodes `Decodable` values from a parsed `JSONValue` (our strict parser's tree): the wire
/// format's decoder, in place of Foundation's `JSONDecoder`. Unknown members are ignored (an
/// older build reads a newer one's messages); absent and `null` members decode as nil
/// optionals; integers must be written as integers and fit their type.
public enum JSONValueDecoder {
    /// Decodes `type` from `value`. - Throws: `DecodingError`.
    public static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try T(from: TreeDecoder(value: value, codingPath: []))
    }

    /// Parses `bytes` and decodes `type`. - Throws: `JSONParseError`, `DecodingError`.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decode(type, from: try JSONParser.parse(bytes))
    }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }
}

private struct TreeDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else {
            throw mismatch([String: Any].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedReader<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([Any].self, value, codingPath) }
        return UnkeyedReader(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleReader(value: value, codingPath: codingPath)
    }
}

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: [any CodingKey]) -> DecodingError {
    .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(value.typeName)"))
}

/// Reads a primitive out of a value. The coding path is built only for an error: building it
/// for every member was an array allocation per decoded field (a profile of the gateway).
private enum Primitive {
    static func bool(_ v: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let b) = v else { throw mismatch(Bool.self, v, path()) }
        return b
    }
    static func string(_ v: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let s) = v else { throw mismatch(String.self, v, path()) }
        return s
    }
    static func integer<I: FixedWidthInteger>(
        _ type: I.Type, _ v: JSONValue, _ path: @autoclosure () -> [any CodingKey]
    ) throws -> I {
        guard case .number(let text) = v else { throw mismatch(type, v, path()) }
        guard let n = I(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path(), debugDescription: "\(text) is not an integer that fits \(type)"))
        }
        return n
    }
    static func double(_ v: JSONValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        guard case .number(let text) = v, let d = Double(text) else { throw mismatch(Double.self, v, path()) }
        return d
    }
}

private struct KeyedReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.members.compactMap { Key(stringValue: $0.name) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no member \(key.stringValue)"))
        }
        return v
    }
    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { (try value(key)) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try Primitive.bool(try value(key), path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try Primitive.string(try value(key), path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try Primitive.double(try value(key), path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try Primitive.double(try value(key), path(key))) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Primitive.integer(type, try value(key), path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try Primitive.integer(type, try value(key), path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try Primitive.integer(type, try value(key), path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try Primitive.integer(type, try value(key), path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try Primitive.integer(type, try value(key), path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try Primitive.integer(type, try value(key), path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try Primitive.integer(type, try value(key), path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try Primitive.integer(type, try value(key), path(key))
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try Primitive.integer(type, try value(key), path(key))
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try Primitive.integer(type, try value(key), path(key))
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try T(from: TreeDecoder(value: try value(key), codingPath: path(key)))
    }

    // Absent or null: nil.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try present(key).map { try Primitive.bool($0, path(key)) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try present(key).map { try Primitive.string($0, path(key)) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try present(key).map { try Primitive.integer(type, $0, path(key)) }
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try present(key).map { try Primitive.integer(type, $0, path(key)) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try present(key).map { try Primitive.double($0, path(key)) }
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try present(key).map { try T(from: TreeDecoder(value: $0, codingPath: path(key))) }
    }
    private func present(_ key: Key) -> JSONValue? {
        guard let v = object[key.stringValue], v != .null else { return nil }
        return v
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try TreeDecoder(value: try value(key), codingPath: path(key)).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try TreeDecoder(value: try value(key), codingPath: path(key)).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder {
        TreeDecoder(value: object["super"] ?? .null, codingPath: codingPath + [AnyKey(stringValue: "super")])
    }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        TreeDecoder(value: object[key.stringValue] ?? .null, codingPath: path(key))
    }
}

private struct UnkeyedReader: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next<T>(_ type: T.Type) throws -> (JSONValue, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath, debugDescription: "the array has no more items"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [AnyKey(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let (v, p) = try next(type)
        return try Primitive.bool(v, p)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let (v, p) = try next(type)
        return try Primitive.string(v, p)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let (v, p) = try next(type)
        return try Primitive.double(v, p)
    }
    mutating func decode(_ type: Int.Type) throws -> Int {
        let (v, p) = try next(type)
        return try Primitive.integer(type, v, p)
    }
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        let (v, p) = try next(type)
        return try Primitive.integer(type, v, p)
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, p) = try next(type)
        return try T(from: TreeDecoder(value: v, codingPath: p))
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (v, p) = try next([String: Any].self)
        return try TreeDecoder(value: v, codingPath: p).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, p) = try next([Any].self)
        return try TreeDecoder(value: v, codingPath: p).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        let (v, p) = try next(Any.self)
        return TreeDecoder(value: v, codingPath: p)
    }
}

private struct SingleReader: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Primitive.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try Primitive.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Primitive.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try Primitive.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Primitive.integer(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Primitive.integer(type, value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: TreeDecoder(value: value, codingPath: codingPath)) }
}
