import CSodium
import Foundation

/// Bearer tokens: 256 random bits from libsodium (`randombytes_buf`), encoded base64url without
/// padding (43 characters). Only the SHA-256 digest of a token is stored, so the database
/// cannot be used to log in.
enum SessionToken {
    /// Tokens longer than this (bytes) are rejected without hashing.
    static let maxLength = 256

    /// A new random token.
    static func make() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        randombytes_buf(&bytes, bytes.count)
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The SHA-256 digest (libsodium `crypto_hash_sha256`) of `text`'s UTF-8 bytes, as 64 hex digits.
    static func digest(_ text: String) -> String {
        let input = Array(text.utf8)
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = input.withUnsafeBufferPointer { crypto_hash_sha256(&out, $0.baseAddress, UInt64($0.count)) }
        return hex(out)
    }

    /// Lower-case hex digits of `bytes`.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
