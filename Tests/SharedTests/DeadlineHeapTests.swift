import Testing

@testable import Support

/// `DeadlineHeap`: entries come out earliest first, only once due.
struct DeadlineHeapTests {
    @Test func entriesComeOutEarliestFirstOnlyOnceDue() {
        var heap = DeadlineHeap<Int>()
        var generator = SystemRandomNumberGenerator()
        let deadlines = (0..<500).map { _ in Int64.random(in: 0..<1_000, using: &generator) }
        for (i, d) in deadlines.enumerated() { heap.insert(i, deadline: d) }
        #expect(heap.count == 500 && heap.earliest?.deadline == deadlines.min())
        #expect(heap.popDue(now: -1) == nil)  // nothing due yet
        var out: [Int64] = []
        while let i = heap.popDue(now: 499) { out.append(deadlines[i]) }
        #expect(out == deadlines.filter { $0 <= 499 }.sorted())
        #expect(heap.earliest.map { $0.deadline > 499 } ?? true)
        while let i = heap.popDue(now: .max) { out.append(deadlines[i]) }
        #expect(out == deadlines.sorted() && heap.count == 0 && heap.earliest == nil)
    }
}
