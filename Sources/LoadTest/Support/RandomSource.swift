/// A seeded pseudo-random generator (SplitMix64 seeding xoshiro256**): the same seed gives
/// the same users, graph and actions, run after run.
struct SeededRandom: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    init(seed: UInt64) {
        var x = seed
        func splitmix(_ x: inout UInt64) -> UInt64 {
            x &+= 0x9E37_79B9_7F4A_7C15
            var z = x
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s = (splitmix(&x), splitmix(&x), splitmix(&x), splitmix(&x))
    }

    mutating func next() -> UInt64 {
        let result = rotl(s.1 &* 5, 7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = rotl(s.3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }

    /// A uniform double in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}

/// Samples ranks 0..<n with probability ∝ 1/(rank+1)^s (Zipf): a power-law popularity.
struct ZipfSampler {
    private let cumulative: [Double]

    init(count n: Int, exponent s: Double = 1.0) {
        var acc = 0.0
        var c: [Double] = []
        c.reserveCapacity(n)
        for k in 0..<n {
            acc += 1.0 / pow(Double(k + 1), s)
            c.append(acc)
        }
        cumulative = c.map { $0 / acc }
    }

    func sample(_ rng: inout SeededRandom) -> Int {
        let u = rng.unit()
        var lo = 0
        var hi = cumulative.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cumulative[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}

#if canImport(Glibc)
    import Glibc
#endif
