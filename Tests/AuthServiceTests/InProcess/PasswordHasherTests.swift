import CSodium
import Harness
import Support
import Testing
import Wire

@testable import AuthService

/// The hasher's admission rules, with its slot held by the test: the outcome depends on the
/// state the test sets up, never on how fast this machine hashes.
@Suite struct PasswordHasherTests {
    init() { _ = sodium_init() }

    /// A hasher of one slot, and that slot, already taken by the test.
    private func heldHasher(queueLimit: Int) async throws -> (PasswordHasher, AsyncSemaphore) {
        let slots = AsyncSemaphore(permits: 1)
        let hasher = try PasswordHasher(concurrency: 1, queueLimit: queueLimit, slots: slots)
        #expect(await slots.acquire())
        return (hasher, slots)
    }

    @Test func aCheckWhoseTurnWouldComeAfterItsDeadlineIsRefusedAtOnceWithRetryAfter() async throws {
        let (hasher, _) = try await heldHasher(queueLimit: 100)
        do {
            _ = try await hasher.verify("password", against: nil, deadline: Timestamp.nowMs() + 1)
            Issue.record("admitted although the slot is held and the deadline is 1 ms away")
        } catch let error as ServiceError {
            #expect(error.code == "busy")
            #expect(error.status == 503)
            #expect((error.retryAfter ?? 0) >= 1)
        }
    }

    @Test func aFullQueueAnswersBusy() async throws {
        let (hasher, _) = try await heldHasher(queueLimit: 0)
        do {
            _ = try await hasher.hash("password", deadline: Timestamp.nowMs() + 60_000)
            Issue.record("admitted although the slot is held and the queue holds nobody")
        } catch let error as ServiceError {
            #expect(error.code == "busy")
            #expect((error.retryAfter ?? 0) >= 1)
        }
    }

    @Test func aQueuedCheckRunsOnceTheSlotIsFree() async throws {
        let (hasher, slots) = try await heldHasher(queueLimit: 10)
        let stored = try await withSlotFreed(slots) {
            try await hasher.hash("correct horse", deadline: Timestamp.nowMs() + 60_000)
        }
        #expect(try await hasher.verify("correct horse", against: stored, deadline: Timestamp.nowMs() + 60_000))
        #expect(!(try await hasher.verify("wrong horse", against: stored, deadline: Timestamp.nowMs() + 60_000)))
        #expect(!(try await hasher.verify("correct horse", against: nil, deadline: Timestamp.nowMs() + 60_000)))
    }

    @Test func hashesAreArgon2idWithOWASPsParametersAndTheirOwnSalt() async throws {
        let hasher = try PasswordHasher(concurrency: 1, queueLimit: 10)
        let first = try await hasher.hash("correct horse", deadline: Timestamp.nowMs() + 60_000)
        let second = try await hasher.hash("correct horse", deadline: Timestamp.nowMs() + 60_000)
        #expect(first.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(first != second)
        for stored in [first, second] {
            #expect(try await hasher.verify("correct horse", against: stored, deadline: Timestamp.nowMs() + 60_000))
        }
    }

    /// Runs `work` (which must queue for the held slot), waits until it is queued, frees the
    /// slot and returns its result. The wait is bounded (60 s) and ends early if `work`
    /// finished without queuing (e.g. refused), so a broken hasher fails the test instead of
    /// spinning forever.
    private func withSlotFreed<T: Sendable>(
        _ slots: AsyncSemaphore, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let finished = Locked(false)
        let task = Task {
            defer { finished.withLock { $0 = true } }
            return try await work()
        }
        let end = Timestamp.nowMs() + 60_000
        while await slots.waiting == 0 {
            if finished.withLock({ $0 }) {
                Issue.record("the work finished without queuing for the held slot")
                return try await task.value
            }
            guard Timestamp.nowMs() < end else {
                task.cancel()
                throw TimedOut(what: "the work to queue for the held slot", seconds: 60)
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        await slots.release()
        return try await task.value
    }
}
