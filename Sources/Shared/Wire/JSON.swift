import Foundation
import Synchronization

/// The JSON coders every message goes through: `JSONWriter` (every object's members sorted by
/// their names' UTF-8 bytes, absent optionals left out, slashes not escaped) and our strict parser with
/// `JSONValueDecoder` (unknown members ignored). Foundation's coders cost most of a request's
/// CPU in every process (measured with perf); these do the same job without an intermediate
/// dictionary tree or bridging.
public enum WireJSON {
    /// Encodes a value to UTF-8 JSON bytes. - Throws: `EncodingError` for a non-finite number.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        try JSONWriter.encode(value, nulls: .omitted)
    }

    /// Decodes a value from UTF-8 JSON bytes. - Throws: `JSONParseError`, `DecodingError`.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONValueDecoder.decode(type, from: bytes)
    }

    /// Decodes a value from an already parsed tree. - Throws: `DecodingError`.
    public static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try JSONValueDecoder.decode(type, from: value)
    }
}
