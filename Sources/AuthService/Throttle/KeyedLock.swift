/// Mutual exclusion per key for async code: tasks holding different keys run concurrently,
/// tasks asking for the same key run one at a time in FIFO order. Suspends, never blocks.
actor KeyedLock {
    /// Held keys and the tasks waiting for each.
    private var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]

    /// Runs `body` while holding `key`.
    nonisolated func withLock<T: Sendable>(_ key: String, _ body: () async throws -> T) async rethrows
        -> T
    {
        await lock(key)
        do {
            let result = try await body()
            await unlock(key)
            return result
        } catch {
            await unlock(key)
            throw error
        }
    }

    private func lock(_ key: String) async {
        guard waiters[key] != nil else {
            waiters[key] = []
            return
        }
        await withCheckedContinuation { waiters[key, default: []].append($0) }
    }

    private func unlock(_ key: String) {
        guard var queue = waiters[key] else { return }
        if queue.isEmpty {
            waiters[key] = nil
        } else {
            let next = queue.removeFirst()
            waiters[key] = queue
            next.resume()  // ownership passes to the next waiter
        }
    }
}
