/// Encodes `Encodable` values straight to JSON bytes (RFC 8259), members in declaration order,
/// with no intermediate tree (Foundation's `JSONEncoder` builds one and was a large share of
/// every request's CPU).
///
/// `nulls` decides what an absent optional becomes: `.explicit` writes `null` (the API's
/// shapes always carry every member), `.omitted` leaves the member out (the wire format, as
/// `JSONEncoder` does). Strings escape `"`, `\` and control characters only (`/` and non-ASCII
/// are written as is). Non-finite doubles are refused (`EncodingError`).
public enum JSONWriter {
    public enum Nulls: Sendable {
        case explicit
        case omitted
    }

    /// The JSON bytes of `value`. - Throws: `EncodingError` for a non-finite number.
    public static func encode<T: Encodable>(_ value: T, nulls: Nulls = .explicit) throws -> [UInt8] {
        let sink = Sink(nulls: nulls)
        try value.encode(to: WriterEncoder(sink: sink))
        return sink.bytes
    }

    /// Appends the JSON string literal for `s` to `out`.
    public static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        let hex = Array("0123456789abcdef".utf8)
        for b in s.utf8 {
            switch b {
            case 0x22: out += [0x5c, 0x22]
            case 0x5c: out += [0x5c, 0x5c]
            case 0x0a: out += [0x5c, 0x6e]
            case 0x0d: out += [0x5c, 0x72]
            case 0x09: out += [0x5c, 0x74]
            case 0..<0x20: out += [0x5c, 0x75, 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 0xf)]]
            default: out.append(b)
            }
        }
        out.append(0x22)
    }
}

/// The buffer every container of one encoding writes to, in order.
private final class Sink {
    var bytes: [UInt8] = []
    let nulls: JSONWriter.Nulls
    init(nulls: JSONWriter.Nulls) {
        self.nulls = nulls
        bytes.reserveCapacity(512)
    }

    func write(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }
    func string(_ s: String) { JSONWriter.appendString(s, to: &bytes) }
    func integer<I: BinaryInteger>(_ v: I) { bytes.append(contentsOf: String(v).utf8) }
    func double(_ v: Double, _ path: [any CodingKey]) throws {
        guard v.isFinite else {
            throw EncodingError.invalidValue(v, .init(codingPath: path, debugDescription: "not a finite number"))
        }
        if v == v.rounded(), abs(v) < 1e15 {
            integer(Int64(v))
        } else {
            bytes.append(contentsOf: "\(v)".utf8)
        }
    }
}

private struct WriterEncoder: Encoder {
    let sink: Sink
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        sink.write("{")
        return KeyedEncodingContainer(KeyedWriter<Key>(sink: sink, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        sink.write("[")
        return UnkeyedWriter(sink: sink, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleWriter(sink: sink, codingPath: codingPath) }
}

/// Closes its object when the last copy of it goes away: synthesized `encode(to:)` makes one
/// container and writes every member through it before returning.
private final class Closer {
    let sink: Sink
    let close: StaticString
    var count = 0
    init(sink: Sink, close: StaticString) {
        self.sink = sink
        self.close = close
    }
    deinit { sink.write(close) }
}

private struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let sink: Sink
    var codingPath: [any CodingKey]
    private let closer: Closer

    init(sink: Sink, codingPath: [any CodingKey]) {
        self.sink = sink
        self.codingPath = codingPath
        self.closer = Closer(sink: sink, close: "}")
    }

    private func key(_ key: Key) {
        if closer.count > 0 { sink.write(",") }
        closer.count += 1
        sink.string(key.stringValue)
        sink.write(":")
    }

    mutating func encodeNil(forKey key: Key) throws {
        self.key(key)
        sink.write("null")
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        self.key(key)
        value ? sink.write("true") : sink.write("false")
    }
    mutating func encode(_ value: String, forKey key: Key) throws {
        self.key(key)
        sink.string(value)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        self.key(key)
        try sink.double(value, codingPath + [key])
    }
    mutating func encode(_ value: Float, forKey key: Key) throws { try encode(Double(value), forKey: key) }
    mutating func encode(_ value: Int, forKey key: Key) throws {
        self.key(key)
        sink.integer(value)
    }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try encode(Int(value), forKey: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        self.key(key)
        sink.integer(value)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        self.key(key)
        sink.integer(value)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try encode(UInt(value), forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try encode(UInt(value), forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try encode(UInt(value), forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        self.key(key)
        sink.integer(value)
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        self.key(key)
        try value.encode(to: WriterEncoder(sink: sink, codingPath: codingPath + [key]))
    }

    // Absent optionals: `null` with `.explicit` (the default would leave the member out).
    private mutating func absent(_ key: Key) throws {
        if sink.nulls == .explicit { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try absent(key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        self.key(key)
        return WriterEncoder(sink: sink, codingPath: codingPath + [key]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        self.key(key)
        return WriterEncoder(sink: sink, codingPath: codingPath + [key]).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { preconditionFailure("JSONWriter does not support superEncoder") }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        preconditionFailure("JSONWriter does not support superEncoder")
    }
}

private struct UnkeyedWriter: UnkeyedEncodingContainer {
    let sink: Sink
    var codingPath: [any CodingKey]
    private let closer: Closer
    var count: Int { closer.count }

    init(sink: Sink, codingPath: [any CodingKey]) {
        self.sink = sink
        self.codingPath = codingPath
        self.closer = Closer(sink: sink, close: "]")
    }

    private func next() {
        if closer.count > 0 { sink.write(",") }
        closer.count += 1
    }

    mutating func encodeNil() throws {
        next()
        sink.write("null")
    }
    mutating func encode(_ value: Bool) throws {
        next()
        value ? sink.write("true") : sink.write("false")
    }
    mutating func encode(_ value: String) throws {
        next()
        sink.string(value)
    }
    mutating func encode(_ value: Double) throws {
        next()
        try sink.double(value, codingPath)
    }
    mutating func encode(_ value: Int) throws {
        next()
        sink.integer(value)
    }
    mutating func encode(_ value: Int64) throws {
        next()
        sink.integer(value)
    }
    mutating func encode<T: Encodable>(_ value: T) throws {
        next()
        try value.encode(to: WriterEncoder(sink: sink, codingPath: codingPath))
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        next()
        return WriterEncoder(sink: sink, codingPath: codingPath).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        next()
        return WriterEncoder(sink: sink, codingPath: codingPath).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder { preconditionFailure("JSONWriter does not support superEncoder") }
}

private struct SingleWriter: SingleValueEncodingContainer {
    let sink: Sink
    var codingPath: [any CodingKey]

    mutating func encodeNil() throws { sink.write("null") }
    mutating func encode(_ value: Bool) throws { value ? sink.write("true") : sink.write("false") }
    mutating func encode(_ value: String) throws { sink.string(value) }
    mutating func encode(_ value: Double) throws { try sink.double(value, codingPath) }
    mutating func encode(_ value: Float) throws { try sink.double(Double(value), codingPath) }
    mutating func encode(_ value: Int) throws { sink.integer(value) }
    mutating func encode(_ value: Int8) throws { sink.integer(value) }
    mutating func encode(_ value: Int16) throws { sink.integer(value) }
    mutating func encode(_ value: Int32) throws { sink.integer(value) }
    mutating func encode(_ value: Int64) throws { sink.integer(value) }
    mutating func encode(_ value: UInt) throws { sink.integer(value) }
    mutating func encode(_ value: UInt8) throws { sink.integer(value) }
    mutating func encode(_ value: UInt16) throws { sink.integer(value) }
    mutating func encode(_ value: UInt32) throws { sink.integer(value) }
    mutating func encode(_ value: UInt64) throws { sink.integer(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try value.encode(to: WriterEncoder(sink: sink, codingPath: codingPath))
    }
}
