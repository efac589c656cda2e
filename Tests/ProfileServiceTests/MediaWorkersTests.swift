import Dispatch
import Foundation
import Support
import Testing
import Wire

@testable import ProfileService

/// The workers that decode uploads: a full queue answers 503 at once, a job whose deadline passed
/// while it waited is not started, and waiting jobs are fair across uploaders by pixels.
@Suite struct MediaWorkersTests {
    /// Occupies the one worker with a job of `owner` until the returned gate is signalled.
    private func occupy(_ workers: MediaWorkers, owner: String, order: Locked<[String]>) async -> (
        DispatchSemaphore, Task<Void, any Error>
    ) {
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let gate = DispatchSemaphore(value: 0)
        let task = Task {
            try await workers.run(owner: owner, cost: 1) {
                order.withLock { $0.append(owner) }
                startedContinuation.yield()
                gate.wait()  // on the worker's dispatch thread
            }
        }
        for await _ in started { break }
        return (gate, task)
    }

    /// Queues a job of `owner` with `cost` and waits until it is queued (`waitingCount` says so).
    private func enqueue(
        _ workers: MediaWorkers, owner: String, cost: Int, order: Locked<[String]>, tasks: inout [Task<Void, any Error>]
    ) async {
        let before = workers.waitingCount
        tasks.append(Task { try await workers.run(owner: owner, cost: cost) { order.withLock { $0.append(owner) } } })
        while workers.waitingCount == before { await Task.yield() }
    }

    @Test func oneUploadersLargeQueueDoesNotHoldBackAnothersSmallPhoto() async throws {
        let workers = MediaWorkers(label: "test.media", count: 1, queueLimit: 100)
        let order = Locked<[String]>([])
        let (gate, running) = await occupy(workers, owner: "alice", order: order)
        var tasks: [Task<Void, any Error>] = [running]
        // Alice queues five 49-megapixel PNGs, then Bob one small JPEG.
        for _ in 0..<5 { await enqueue(workers, owner: "alice", cost: 49_000_000, order: order, tasks: &tasks) }
        await enqueue(workers, owner: "bob", cost: 300_000, order: order, tasks: &tasks)
        gate.signal()
        for task in tasks { try await task.value }
        // Bob's is next after the one already running, not after Alice's queue.
        #expect(order.withLock { $0 } == ["alice", "bob", "alice", "alice", "alice", "alice", "alice"])
    }

    @Test func turnsAreWeighedByPixelsNotFiles() async throws {
        let workers = MediaWorkers(label: "test.media", count: 1, queueLimit: 100, quantum: 2_000_000)
        let order = Locked<[String]>([])
        let (gate, running) = await occupy(workers, owner: "carol", order: order)
        var tasks: [Task<Void, any Error>] = [running]
        // Alice: three 8 MP photos; Bob: eight 1 MP photos, queued after hers.
        for _ in 0..<3 { await enqueue(workers, owner: "alice", cost: 8_000_000, order: order, tasks: &tasks) }
        for _ in 0..<8 { await enqueue(workers, owner: "bob", cost: 1_000_000, order: order, tasks: &tasks) }
        gate.signal()
        for task in tasks { try await task.value }
        let done = order.withLock { $0 }.dropFirst()
        // By files, Bob would get one turn per photo of Alice's; by pixels, about eight 1 MP
        // photos of his take the time of one 8 MP photo of hers.
        #expect(done.prefix { $0 == "bob" }.count >= 4, "\(done)")
        #expect(done.filter { $0 == "alice" }.count == 3 && done.filter { $0 == "bob" }.count == 8)
    }

    @Test func aFullQueueIsRefusedAndALateJobIsNotStarted() async throws {
        let workers = MediaWorkers(label: "test.media", count: 1, queueLimit: 0)
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let gate = DispatchSemaphore(value: 0)
        let first = Task {
            try await workers.run { () -> Int in
                startedContinuation.yield()
                gate.wait()  // on the worker's dispatch thread
                return 1
            }
        }
        for await _ in started { break }
        await #expect(
            throws: ServiceError(code: "busy", message: "too many uploads are being processed", status: 503, retryAfter: 1)
        ) {
            try await workers.run { 2 }
        }
        gate.signal()
        #expect(try await first.value == 1)

        let ran = Locked(false)
        await #expect(throws: ServiceError(code: "deadline_exceeded", message: "the deadline passed while waiting", status: 504))
        {
            try await RequestDeadline.$current.withValue(Timestamp.nowMs() - 1) {
                try await workers.run { ran.withLock { $0 = true } }
            }
        }
        #expect(!ran.withLock { $0 })
        #expect(try await workers.run { 3 } == 3)
    }
}
