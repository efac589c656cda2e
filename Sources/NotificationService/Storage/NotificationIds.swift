import Storage
import Wire

/// Notification ids as clients see them: opaque and unguessable, yet decodable by the service.
///
/// An id is the recipient's key and the notification's seq, each below 2^48, put in one 128-bit
/// block (key in the high 64 bits, seq in the low 64) and enciphered by a keyed permutation: a
/// 4-round Feistel network over the two 64-bit halves whose round function is SipHash-2-4
/// (Luby–Rackoff: four rounds of a pseudo-random function give a strong pseudo-random
/// permutation). The block is rendered base64url without padding (RFC 4648 §5): 22 characters.
/// Without the secret, ids of consecutive users or notifications share nothing visible; with
/// it, `decode` recovers (key, seq) and refuses a forged id (the 32 bits the bounds leave zero
/// must decipher to zero, so a random string passes with odds of 2^-32).
///
/// The secret (32 random bytes) is made once per database by the migration
/// `notification.10-id-secret` and read from `secrets`, so ids are stable across restarts and
/// the same for every process sharing the database.
struct NotificationIds: Sendable, Equatable {
    /// Four SipHash keys, one per round.
    private let roundKeys: [(UInt64, UInt64)]

    /// The largest key and seq an id can carry, exclusive: 2^48.
    static let bound: Int64 = 1 << 48
    /// The name of the secret in `secrets`.
    static let secretName = "notification_ids"

    /// - Parameter secret: at least 32 bytes (only the first 32 are used).
    /// - Precondition: `secret.count >= 32`.
    init(secret: [UInt8]) {
        precondition(secret.count >= 32, "a notification id secret has 32 bytes")
        func word(_ i: Int) -> UInt64 {
            (0..<8).reduce(UInt64(0)) { $0 | UInt64(secret[i * 8 + $1]) << (8 * UInt64($1)) }
        }
        let (k0, k1, k2, k3) = (word(0), word(1), word(2), word(3))
        // Each round its own key: the secret's two halves, with the round number mixed in.
        roundKeys = (0..<4).map { r in
            let tweak = UInt64(r) &* 0x9E37_79B9_7F4A_7C15
            return r % 2 == 0 ? (k0 ^ tweak, k1) : (k2 ^ tweak, k3)
        }
    }

    static func == (a: NotificationIds, b: NotificationIds) -> Bool {
        a.roundKeys.elementsEqual(b.roundKeys) { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// The codec of the database `c` belongs to.
    /// - Throws: the engine's error, `RowError`; 500 `internal_error` when the database has no
    ///   secret (its migrations did not run).
    static func load(on c: DatabaseConnection) throws -> NotificationIds {
        guard let row = try c.queryOne("SELECT value FROM secrets WHERE name = \(secretName)") else {
            throw ServiceError(.internalError, message: "no notification id secret", status: 500)
        }
        return NotificationIds(secret: try row.blob("value"))
    }

    /// The id of notification `seq` of the recipient with key `recipient`.
    /// - Precondition: both in `0..<bound`.
    func id(recipient: Int64, seq: Int64) -> String {
        precondition((0..<Self.bound).contains(recipient) && (0..<Self.bound).contains(seq))
        var (l, r) = (UInt64(recipient), UInt64(seq))
        for k in roundKeys {
            (l, r) = (r, l ^ Self.sipHash(r, key: k))
        }
        return Self.base64url(l, r)
    }

    /// The recipient key and seq of `id`, nil for anything `id(recipient:seq:)` did not make
    /// with this secret (wrong length or alphabet, or a forgery).
    func decode(_ id: String) -> (recipient: Int64, seq: Int64)? {
        guard var (l, r) = Self.unbase64url(id) else { return nil }
        for k in roundKeys.reversed() {
            (l, r) = (r ^ Self.sipHash(l, key: k), l)
        }
        guard l < UInt64(Self.bound), r < UInt64(Self.bound) else { return nil }
        return (Int64(l), Int64(r))
    }

    // MARK: SipHash-2-4 of one 64-bit word (https://www.aumasson.jp/siphash/siphash.pdf)

    static func sipHash(_ m: UInt64, key: (UInt64, UInt64)) -> UInt64 {
        var v0 = 0x736f_6d65_7073_6575 ^ key.0
        var v1 = 0x646f_7261_6e64_6f6d ^ key.1
        var v2 = 0x6c79_6765_6e65_7261 ^ key.0
        var v3 = 0x7465_6462_7974_6573 ^ key.1
        func round() {
            v0 &+= v1
            v1 = (v1 << 13 | v1 >> 51) ^ v0
            v0 = v0 << 32 | v0 >> 32
            v2 &+= v3
            v3 = (v3 << 16 | v3 >> 48) ^ v2
            v0 &+= v3
            v3 = (v3 << 21 | v3 >> 43) ^ v0
            v2 &+= v1
            v1 = (v1 << 17 | v1 >> 47) ^ v2
            v2 = v2 << 32 | v2 >> 32
        }
        // The message: the 8 bytes of `m`, then the final block holding the length (8).
        for block in [m, UInt64(8) << 56] {
            v3 ^= block
            round()
            round()
            v0 ^= block
        }
        v2 ^= 0xFF
        for _ in 0..<4 { round() }
        return v0 ^ v1 ^ v2 ^ v3
    }

    // MARK: base64url of 16 bytes, no padding (RFC 4648 §5)

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func base64url(_ hi: UInt64, _ lo: UInt64) -> String {
        let bytes =
            (0..<8).map { UInt8(truncatingIfNeeded: hi >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: lo >> (56 - 8 * UInt64($0))) }
        var out: [UInt8] = []
        out.reserveCapacity(22)
        var i = 0
        while i < 16 {
            let chunk = bytes[i..<min(i + 3, 16)]
            let n = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            let chars = chunk.count + 1
            for j in 0..<chars { out.append(alphabet[Int(n >> (18 - 6 * UInt32(j)) & 0x3F)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func unbase64url(_ s: String) -> (UInt64, UInt64)? {
        let chars = Array(s.utf8)
        guard chars.count == 22 else { return nil }
        var values: [UInt32] = []
        values.reserveCapacity(22)
        for c in chars {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(UInt32(c - UInt8(ascii: "A")))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(UInt32(c - UInt8(ascii: "a")) + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(UInt32(c - UInt8(ascii: "0")) + 52)
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        // The last character carries 2 bits of the 16th byte and 4 bits that must be zero.
        guard values[21] & 0xF == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var i = 0
        while i < 22 {
            let group = values[i..<min(i + 4, 22)]
            let n = group.enumerated().reduce(UInt32(0)) { $0 | $1.element << (18 - 6 * UInt32($1.offset)) }
            for j in 0..<(group.count - 1) { bytes.append(UInt8(truncatingIfNeeded: n >> (16 - 8 * UInt32(j)))) }
            i += 4
        }
        let hi = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let lo = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return (hi, lo)
    }
}
