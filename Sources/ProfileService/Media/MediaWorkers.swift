import Dispatch
import Media
import Support
import Synchronization
import Wire

/// Runs blocking media work (decoding, encoding, file writes and reads) on dispatch threads, not
/// on the cooperative pool (STYLE.md 8), at most `count` jobs at once; further jobs wait their
/// turn without holding a thread, so the service's other requests keep being answered. At most
/// `queueLimit` jobs wait (then 503), and a job whose request deadline passed while it waited is
/// not started (504): under overload no CPU goes to uploads nobody waits for.
///
/// Waiting jobs are fair across owners (uploaders) and weighed by their cost (pixels, not
/// files): deficit round robin (Shreedhar and Varghese, 1995) over one queue per owner. Each
/// owner's turn adds `quantum` to its credit; its next job starts once its cost fits the credit.
/// So an uploader with 24 large images queued takes its turns, and another's small photo waits
/// for at most the jobs already running and about one turn of each owner, never for the queue.
final class MediaWorkers: Sendable {
    private struct Waiter {
        let cost: Int
        /// Resumed with true when the job may start.
        let start: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var running = 0
        var waiting = 0
        /// Waiting jobs per owner, oldest first; `owners` holds those with any, in turn order.
        var queues: [String: [Waiter]] = [:]
        var owners: [String] = []
        var turn = 0
        var credit: [String: Int] = [:]

        mutating func enqueue(_ waiter: Waiter, owner: String) {
            if queues[owner] == nil {
                owners.append(owner)
                credit[owner] = 0
            }
            queues[owner, default: []].append(waiter)
            waiting += 1
        }

        /// The next job to start by deficit round robin, taken off its queue (nil: none waits).
        mutating func next(quantum: Int) -> Waiter? {
            guard !owners.isEmpty else { return nil }
            while true {
                if turn >= owners.count { turn = 0 }
                let owner = owners[turn]
                let head = queues[owner]![0]
                if head.cost <= credit[owner, default: 0] {
                    queues[owner]!.removeFirst()
                    credit[owner]! -= head.cost
                    waiting -= 1
                    if queues[owner]!.isEmpty {
                        // An owner with nothing waiting keeps no credit (it would be a burst later).
                        queues[owner] = nil
                        credit[owner] = nil
                        owners.remove(at: turn)
                        if !owners.isEmpty {
                            turn %= owners.count
                            credit[owners[turn], default: 0] += quantum
                        }
                    }
                    return head
                }
                turn = (turn + 1) % owners.count
                credit[owners[turn], default: 0] += quantum
            }
        }
    }

    private let state = Mutex(State())
    private let queue: DispatchQueue
    private let count: Int
    private let queueLimit: Int
    private let quantum: Int

    /// - Parameters:
    ///   - label: the dispatch queue's label.
    ///   - count: jobs at once (≥ 1).
    ///   - queueLimit: jobs that may wait for a slot.
    ///   - quantum: the credit an owner's turn adds, in cost units (default 2,000,000: a 2 MP
    ///     photo per turn; ≥ 1).
    init(label: String, count: Int, queueLimit: Int, quantum: Int = 2_000_000) {
        queue = DispatchQueue(label: label, attributes: .concurrent)
        self.count = max(1, count)
        self.queueLimit = queueLimit
        self.quantum = max(1, quantum)
    }

    /// Jobs waiting for a slot now.
    var waitingCount: Int { state.withLock { $0.waiting } }

    /// Runs `body` on a worker thread once a slot is free and it is `owner`'s turn.
    /// - Parameters:
    ///   - owner: whose job it is (an uploader's id); jobs of one owner start in order.
    ///   - cost: the job's weight (pixels to decode for a photo; see `MediaProcessor.workEstimate`).
    /// - Throws: 503 `busy` (with `Retry-After`) when `queueLimit` jobs already wait, 504
    ///   `deadline_exceeded` when the request's deadline (`RequestDeadline`) passed while waiting,
    ///   else what `body` throws.
    func run<T: Sendable>(owner: String = "", cost: Int = 1, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let cost = max(1, cost)
        let admitted: Bool = await withCheckedContinuation { (decided: CheckedContinuation<Bool, Never>) in
            let (now, ready) = state.withLock { s -> (Bool?, Waiter?) in
                if s.running < count && s.waiting == 0 {
                    s.running += 1
                    return (true, nil)
                }
                guard s.waiting < queueLimit else { return (false, nil) }
                s.enqueue(Waiter(cost: cost, start: decided), owner: owner)
                return (nil, takeSlot(&s))
            }
            if let now { decided.resume(returning: now) }
            ready?.start.resume(returning: true)
        }
        guard admitted else {
            throw ServiceError(.busy, message: "too many uploads are being processed", status: 503, retryAfter: 1)
        }
        if let deadline = RequestDeadline.current, Timestamp.nowMs() >= deadline {
            release()
            throw ServiceError(.deadlineExceeded, message: "the deadline passed while waiting", status: 504)
        }
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { try body() }) }
        }
        release()
        return try result.get()
    }

    /// The next waiting job, if a slot is free (the slot is taken for it).
    private func takeSlot(_ s: inout State) -> Waiter? {
        guard s.running < count, let waiter = s.next(quantum: quantum) else { return nil }
        s.running += 1
        return waiter
    }

    /// Gives a slot back and starts the job whose turn it is.
    private func release() {
        let ready = state.withLock { s -> Waiter? in
            s.running -= 1
            return takeSlot(&s)
        }
        ready?.start.resume(returning: true)
    }
}

extension ServiceError {
    /// The Media library's error as a service error: its status and code (API.md "Media":
    /// 415 `unsupported_media`, 413 `payload_too_large`, 422 `image_too_large`, 500).
    init(_ error: MediaError) {
        self.init(code: error.httpStatus == 500 ? "internal_error" : error.code, message: error.detail, status: error.httpStatus)
    }
}
