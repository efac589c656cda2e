import Synchronization

/// Identifiers: 128 bits as 32 lower-case hex digits.
public enum RandomID {
    /// A new random id (SystemRandomNumberGenerator: getrandom(2) on Linux), for what is stored
    /// and shown: accounts, sessions, posts, comments.
    public static func make() -> String {
        var g = SystemRandomNumberGenerator()
        return hex(g.next(), g.next())
    }

    /// The process's random half of `unique()` ids, drawn once.
    private static let processSeed: UInt64 = {
        var g = SystemRandomNumberGenerator()
        return g.next()
    }()
    private static let counter = Atomic<UInt64>(0)

    /// A new id unique to this process run and, with 64 random bits, across processes: for
    /// correlation and trace ids, which need uniqueness, not secrecy (a system call per id
    /// was a visible share of a request's CPU).
    public static func unique() -> String {
        hex(processSeed, counter.add(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15)
    }

    private static func hex(_ a: UInt64, _ b: UInt64) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { out in
            for (k, word) in [a, b].enumerated() {
                for i in 0..<16 {
                    let nibble = Int((word >> UInt64(60 - 4 * i)) & 0xf)
                    out[16 * k + i] = nibble < 10 ? UInt8(48 + nibble) : UInt8(87 + nibble)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}
