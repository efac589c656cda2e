import Foundation

/// The JSON coders every message goes through: sorted keys (stable bytes for golden tests),
/// no escaped slashes (URLs stay readable).
public enum WireJSON {
    /// Encodes a value to UTF-8 JSON bytes.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// Decodes a value from UTF-8 JSON bytes.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try JSONDecoder().decode(type, from: Data(bytes))
    }
}

/// RFC 3339 UTC timestamps with milliseconds (`2026-11-29T18:04:50.123Z`), the API's time format.
public enum Timestamp {
    /// Milliseconds since the Unix epoch, now.
    public static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }

    /// Formats Unix milliseconds as RFC 3339 UTC with millisecond precision.
    public static func format(ms: Int64) -> String {
        var t = time_t(ms / 1000)
        var parts = tm()
        gmtime_r(&t, &parts)
        let millis = Int(ms % 1000)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }

    /// Now, formatted.
    public static func now() -> String { format(ms: nowMs()) }
}

/// Random identifiers for correlation ids, trace ids and row ids: 128 bits as 32 hex digits.
public enum RandomID {
    /// A new random id (SystemRandomNumberGenerator: getrandom(2) on Linux).
    public static func make() -> String {
        var g = SystemRandomNumberGenerator()
        return String(format: "%016llx%016llx", g.next() as UInt64, g.next() as UInt64)
    }
}
