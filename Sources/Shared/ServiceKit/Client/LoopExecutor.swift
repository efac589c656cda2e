import Foundation
import Support
import Synchronization
import Transport

/// A task executor (SE-0417) whose jobs run on one event-loop thread, between its polls.
///
/// Why: a request that arrives on a loop thread and is handled on Swift's global pool costs
/// two thread handoffs (a pool thread wakes to start the handler, the loop wakes again to take
/// its answer), and every `await` that resumes from another thread wakes a pool thread first.
/// With the loop as the handler's preferred executor (`Task(executorPreference:)`), the handler
/// starts in the loop's own turn, its answer is sent in that turn, and a resumption from
/// another thread wakes only the loop. Child tasks (`async let`, task groups) inherit the
/// preference; blocking work must still go elsewhere (database queues, argon2 and media
/// queues), since a job that blocks holds up the whole loop.
///
/// The loop calls `runPending()` once per turn and polls with a zero timeout while
/// `hasPending` is true. `enqueue` from another thread signals the loop's `Wakeup`; from the
/// loop thread itself it does not (the loop runs the job before it polls again).
public final class LoopExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` is behind a lock; `owner` is an atomic; `wakeup` is Sendable.
    // `Locked` (a pthread mutex), not `Mutex`: ThreadSanitizer cannot see `Mutex`'s lock and
    // reported the enqueue from another thread and the loop's `hasPending` as a race.
    private let jobs = Locked<[UnownedJob]>([])
    private let wakeup: Wakeup
    /// `pthread_self()` of the loop thread, as an integer (0 until `bind()`).
    private let owner = Atomic<UInt>(0)
    /// Jobs one `runPending()` starts no new batch after (it finishes the batch it took): a job
    /// that keeps enqueueing another cannot starve the loop's sockets.
    public let maxJobsPerTurn = 1_024
    /// Set by `stop()`: the loop runs no more turns, and jobs run on Dispatch's global queue.
    private let stopped = Atomic<Bool>(false)

    /// - Parameter wakeup: the loop's wakeup, signalled when a job arrives from another thread.
    public init(wakeup: Wakeup) {
        self.wakeup = wakeup
    }

    /// Makes the calling thread the loop thread; called once, by it, before its first turn.
    public func bind() {
        owner.store(UInt(pthread_self()), ordering: .releasing)
        LoopThread.markCurrent()
    }

    /// Whether the caller runs on the loop thread.
    public var isLoopThread: Bool {
        owner.load(ordering: .acquiring) == UInt(pthread_self())
    }

    /// Whether jobs wait to run (the loop must not sleep).
    public var hasPending: Bool { jobs.withLock { !$0.isEmpty } }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let running = jobs.withLock { queue -> Bool in
            if stopped.load(ordering: .acquiring) { return false }
            queue.append(unowned)
            return true
        }
        if !running {
            // The loop is gone: the task still finishes (and frees what it holds), elsewhere.
            DispatchQueue.global().async { unowned.runSynchronously(on: self.asUnownedTaskExecutor()) }
        } else if !isLoopThread {
            wakeup.signal()
        }
    }

    /// Called by the loop thread when its loop ends: the jobs still waiting, and every job
    /// enqueued from now on, run on Dispatch's global queue, so that a task resumed after the
    /// loop stopped (a reply failed at shutdown) still finishes instead of waiting forever.
    public func stop() {
        let left = jobs.withLock { queue -> [UnownedJob] in
            stopped.store(true, ordering: .releasing)
            var taken: [UnownedJob] = []
            swap(&taken, &queue)
            return taken
        }
        for job in left {
            DispatchQueue.global().async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// Runs the jobs waiting now and those they enqueue, up to `maxJobsPerTurn`; loop thread only.
    public func runPending() {
        var ran = 0
        while ran < maxJobsPerTurn {
            let batch = jobs.withLock { queue -> [UnownedJob] in
                var taken: [UnownedJob] = []
                swap(&taken, &queue)
                return taken
            }
            if batch.isEmpty { return }
            for job in batch { job.runSynchronously(on: asUnownedTaskExecutor()) }
            ran += batch.count
        }
    }
}
