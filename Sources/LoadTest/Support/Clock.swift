#if canImport(Glibc)
    import Glibc
#endif

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC): the one time base of every measurement.
enum Clock {
    static func nowNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Milliseconds between two monotonic instants (negative if `to` is earlier).
    static func ms(from: UInt64, to: UInt64) -> Double { (Double(to) - Double(from)) / 1e6 }
}

/// A min-heap of values keyed by a monotonic time: the open-loop schedule.
struct TimeHeap<Value> {
    private var items: [(UInt64, Value)] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var peekTime: UInt64? { items.first?.0 }

    mutating func push(_ time: UInt64, _ value: Value) {
        items.append((time, value))
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if items[p].0 <= items[i].0 { break }
            items.swapAt(p, i)
            i = p
        }
    }

    mutating func pop() -> Value? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var m = i
            if l < items.count && items[l].0 < items[m].0 { m = l }
            if r < items.count && items[r].0 < items[m].0 { m = r }
            if m == i { break }
            items.swapAt(m, i)
            i = m
        }
        return top.1
    }
}
