import Synchronization

/// Wakes one waiting task, any number of times: `ring()` from anywhere, `wait(timeoutMs:)` in
/// the task that does the work. Rings while nobody waits merge into one, kept for the next wait.
///
/// Unlike an `AsyncStream` used as a doorbell, it survives its waiter's cancellation: a
/// background job stopped when its replica loses leadership and started again when it wins it
/// back waits on the same doorbell.
public final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
    }
    private let state = Locked(State())
    private let nextId = Atomic<Int>(0)

    public init() {}

    /// Wakes the waiter, or the next one to wait.
    public func ring() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter else {
                s.rung = true
                return nil
            }
            s.waiter = nil
            return w.continuation
        }
        waiter?.resume()
    }

    /// Returns when the doorbell rings (at once if it rang since the last wait), when
    /// `timeoutMs` passes (nil: never), or when the task is cancelled. One waiter at a time.
    public func wait(timeoutMs: Int? = nil) async {
        let id = nextId.add(1, ordering: .relaxed).newValue
        let timer = timeoutMs.map { ms in
            Task { [weak self] in
                try? await Task.sleep(for: .milliseconds(ms))
                self?.wake(id)
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.rung || Task.isCancelled {
                        s.rung = false
                        return true
                    }
                    s.waiter = (id, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
        timer?.cancel()
    }

    private func wake(_ id: Int) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter, w.id == id else { return nil }
            s.waiter = nil
            return w.continuation
        }
        waiter?.resume()
    }
}
