import Dispatch
import Foundation
import Shared
import Testing

@testable import ProfileService

/// The workers that decode uploads: a full queue answers 503 at once, a job whose deadline passed
/// while it waited is not started.
@Suite struct MediaWorkersTests {
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
