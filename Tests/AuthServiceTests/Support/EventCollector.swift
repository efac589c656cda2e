import Shared
import Synchronization

/// Collects events an `EventSubscriber` delivers and lets a test wait for a count of them,
/// woken by the delivery itself (a timeout task resumes it otherwise).
final class EventCollector: Sendable {
    private struct State {
        var events: [ReceivedEvent] = []
        var waiters: [(id: Int, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var nextId = 0
    }
    private let state = Mutex(State())

    var events: [ReceivedEvent] { state.withLock { $0.events } }

    /// The subscriber's `deliver` callback.
    func deliver(_ event: ReceivedEvent) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.events.append(event)
            let n = s.events.count
            let ready = s.waiters.filter { $0.count <= n }.map(\.continuation)
            s.waiters.removeAll { $0.count <= n }
            return ready
        }
        for c in ready { c.resume() }
    }

    /// Waits until at least `count` events arrived or `timeout` seconds passed.
    /// - Returns: whether `count` arrived.
    func waitFor(count: Int, timeout: Double = 10) async -> Bool {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let id = state.withLock { s -> Int? in
                if s.events.count >= count { return nil }
                s.nextId += 1
                s.waiters.append((s.nextId, count, c))
                return s.nextId
            }
            guard let id else {
                c.resume()
                return
            }
            Task {
                try? await Task.sleep(for: .seconds(timeout))
                let timedOut = self.state.withLock { s -> CheckedContinuation<Void, Never>? in
                    guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return s.waiters.remove(at: i).continuation
                }
                timedOut?.resume()
            }
        }
        return events.count >= count
    }
}
