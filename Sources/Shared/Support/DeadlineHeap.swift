/// A binary min-heap of deadlines, each with a key: what a loop uses to find the next deadline
/// and the ones that passed in O(log n) per entry, instead of scanning everything it waits for.
///
/// Entries are never removed early: a loop whose entry was settled another way (a reply before
/// the deadline) leaves it in, and skips it when it comes out (lazy deletion), so the heap holds
/// at most what was added during one timeout window.
///
/// Inlinable, so each user's copy is specialized for its key type (a generic heap across a
/// module boundary goes through witness tables for every swap).
public struct DeadlineHeap<Key> {
    @usableFromInline var entries: [(deadline: Int64, key: Key)] = []

    @inlinable public init() {}

    /// Entries held, settled or not.
    @inlinable public var count: Int { entries.count }

    /// The entry with the earliest deadline (Unix ms), nil when empty.
    @inlinable public var earliest: (deadline: Int64, key: Key)? { entries.first }

    /// Adds `key` due at `deadline` (Unix ms).
    @inlinable public mutating func insert(_ key: Key, deadline: Int64) {
        entries.append((deadline, key))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the entry with the earliest deadline if it is at or before `now`.
    @inlinable public mutating func popDue(now: Int64) -> Key? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        removeEarliest()
        return first.key
    }

    /// Removes the entry with the earliest deadline (none when empty).
    @inlinable public mutating func removeEarliest() {
        guard !entries.isEmpty else { return }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count && entries[left].deadline < entries[smallest].deadline { smallest = left }
                if right < entries.count && entries[right].deadline < entries[smallest].deadline { smallest = right }
                if smallest == parent { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }
}
