/// A counting semaphore for async code: at most `permits` holders at once, waiters resumed in
/// FIFO order. Waiting suspends the task; it never blocks a thread.
public actor AsyncSemaphore {
    private var available: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// - Parameter permits: how many holders at once (≥ 1).
    public init(permits: Int) {
        available = max(1, permits)
    }

    /// Takes a permit, waiting if none is free.
    /// - Parameters:
    ///   - maxWaiting: when this many tasks already wait, gives up at once.
    ///   - admit: asked with the number of tasks already waiting when there is no free permit;
    ///     returning false gives up at once (e.g. when the wait would outlast a deadline).
    /// - Returns: whether a permit was taken (false when the queue was full or not admitted).
    public func acquire(maxWaiting: Int = .max, admit: @Sendable (Int) -> Bool = { _ in true }) async -> Bool {
        if available > 0 {
            available -= 1
            return true
        }
        guard waiters.count < maxWaiting, admit(waiters.count) else { return false }
        await withCheckedContinuation { waiters.append($0) }
        return true  // the releaser handed its permit over
    }

    /// Tasks waiting for a permit.
    public var waiting: Int { waiters.count }

    /// Returns a permit, handing it to the oldest waiter if any.
    public func release() {
        if waiters.isEmpty {
            available += 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}
