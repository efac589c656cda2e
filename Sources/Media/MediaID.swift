import CSodium

/// The content address of an upload: the SHA-256 of its bytes (FIPS 180-4), as 64 lowercase hex digits.
///
/// Uploading the same bytes twice gives the same id, so the store keeps one copy. The id is unguessable
/// without the bytes themselves (256 bits); whoever already has the exact file can tell whether it was
/// uploaded, which is the usual trade of content addressing. Only 64 hex digits are accepted, so an id is
/// always safe to use as a path component.
public struct MediaID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// 64 lowercase hexadecimal digits.
    public let hex: String

    /// Parses an id from a URL path segment; nil unless it is exactly 64 lowercase hex digits.
    public init?(_ hex: String) {
        guard hex.utf8.count == 64, hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return nil
        }
        self.hex = hex
    }

    /// The id of `bytes`: their SHA-256 (libsodium's `crypto_hash_sha256`).
    public init(contentOf bytes: [UInt8]) {
        self.hex = Self.sha256Hex(bytes)
    }

    /// SHA-256 of `bytes` (libsodium's `crypto_hash_sha256`) as 64 lowercase hex digits.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        bytes.withUnsafeBufferPointer { input in
            _ = crypto_hash_sha256(&digest, input.baseAddress, UInt64(input.count))
        }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The 64 hex digits.
    public var description: String { hex }

    /// Decodes from a JSON string of 64 lowercase hex digits.
    /// - Throws: `DecodingError.dataCorrupted` for anything else.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = MediaID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a media id"))
        }
        self = id
    }

    /// Encodes as a JSON string of 64 hex digits.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
