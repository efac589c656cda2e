import Foundation

/// A latency sample: when the action was scheduled (seconds since the run started) and how long
/// its outcome took (ms).
struct Sample: Sendable {
    var atS: Double
    var ms: Double
}

/// Percentiles of a set of latencies (ms), by nearest rank.
struct LatencySummary: Codable, Sendable {
    var count: Int
    var p50: Double
    var p90: Double
    var p99: Double
    var p999: Double
    var max: Double
    var mean: Double

    init(_ values: [Double]) {
        let v = values.sorted()
        count = v.count
        func pct(_ p: Double) -> Double {
            guard !v.isEmpty else { return 0 }
            let rank = Int((p / 100 * Double(v.count)).rounded(.up))
            return v[Swift.max(0, Swift.min(v.count - 1, rank - 1))]
        }
        p50 = pct(50)
        p90 = pct(90)
        p99 = pct(99)
        p999 = pct(99.9)
        max = v.last ?? 0
        mean = v.isEmpty ? 0 : v.reduce(0, +) / Double(v.count)
    }
}

/// Per-second p50/p99 of samples (by scheduled second).
struct TimelinePoint: Codable, Sendable {
    var second: Int
    var count: Int
    var p50: Double
    var p99: Double
    var max: Double

    static func timeline(_ samples: [Sample]) -> [TimelinePoint] {
        var buckets: [Int: [Double]] = [:]
        for s in samples { buckets[Int(s.atS), default: []].append(s.ms) }
        return buckets.keys.sorted().map { k in
            let sum = LatencySummary(buckets[k]!)
            return TimelinePoint(second: k, count: sum.count, p50: sum.p50, p99: sum.p99, max: sum.max)
        }
    }
}
