import Foundation
import Testing

@testable import Storage
@testable import Support
@testable import Wire

/// `Locked` holding a closure: reading it 10,000 times must not wrap it in 20,000 thunks (each
/// `withLock { $0 }` read did; the database's publisher is read on every commit).
struct LockedClosureTests {
    @Test func readingAStoredClosureDoesNotDeepenIt() {
        let depth = Locked(0)
        let stored = Locked<(@Sendable () -> Void)?>(nil)
        stored.set { depth.set(Thread.callStackReturnAddresses.count) }
        stored.get()?()
        let first = depth.get()
        for _ in 0..<10_000 { _ = stored.get() }
        stored.get()?()
        #expect(depth.get() == first)
    }

    /// The database reads its publisher on every commit with events: the publisher's call stack
    /// is as deep after 2,000 commits as after the first.
    @Test func theDatabasePublisherStaysShallowOverManyCommits() async throws {
        let dir = NSTemporaryDirectory() + "locked-\(RandomID.make().prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let database = try Database(path: "\(dir)/p.sqlite", producer: "test", migrations: [])
        let depths = Locked<[Int]>([])
        database.setPublisher { _ in depths.withLock { $0.append(Thread.callStackReturnAddresses.count) } }
        for i in 0..<2_000 {
            _ = try await database.write { tx in try tx.emit(TestRPC.Happened(n: i)) }
        }
        let seen = depths.get()
        #expect(seen.count == 2_000)
        #expect(Set(seen).count == 1, "depths from \(seen.min() ?? 0) to \(seen.max() ?? 0)")
    }
}
