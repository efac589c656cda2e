/// A counting semaphore for async code: at most `permits` holders at once, waiters resumed in
/// FIFO order. Waiting suspends the task; it never blocks a thread.
actor AsyncSemaphore {
    private var available: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// - Parameter permits: how many holders at once (≥ 1).
    init(permits: Int) {
        available = max(1, permits)
    }

    /// Takes a permit, waiting if none is free.
    /// - Parameter maxWaiting: when this many tasks already wait, gives up at once.
    /// - Returns: whether a permit was taken (false only when the queue was full).
    func acquire(maxWaiting: Int = .max) async -> Bool {
        if available > 0 {
            available -= 1
            return true
        }
        guard waiters.count < maxWaiting else { return false }
        await withCheckedContinuation { waiters.append($0) }
        return true  // the releaser handed its permit over
    }

    /// Returns a permit, handing it to the oldest waiter if any.
    func release() {
        if waiters.isEmpty {
            available += 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}
