import Shared
import Synchronization

/// Group commit: write operations that arrive while a transaction is running are queued and
/// then run together in the next one, so many concurrent small writes (follows, unfollows, read
/// marks) cost one commit and one queue hop per batch instead of one each.
///
/// Each operation still sees the effects of the ones before it, in arrival order. If any
/// operation of a batch throws, the whole batch is rolled back (its outbox events with it) and
/// every operation is run again alone, so one failing request never fails the others.
final class WriteBatcher: Sendable {
    private struct Operation: Sendable {
        let body: @Sendable (Transaction) throws -> any Sendable
        let continuation: CheckedContinuation<any Sendable, any Error>
    }

    private struct State {
        var queued: [Operation] = []
        var draining = false
    }

    private let database: Database
    private let state = Mutex(State())
    /// Most operations per transaction.
    let maxBatch: Int

    init(database: Database, maxBatch: Int = 512) {
        self.database = database
        self.maxBatch = maxBatch
    }

    /// Runs `body` in a write transaction shared with other queued operations.
    /// - Throws: whatever `body` throws (run alone), or `SQLiteError`.
    func write<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        let result = try await withCheckedThrowingContinuation {
            (c: CheckedContinuation<any Sendable, any Error>) in
            let start = state.withLock { s -> Bool in
                s.queued.append(Operation(body: { try body($0) }, continuation: c))
                guard !s.draining else { return false }
                s.draining = true
                return true
            }
            if start { Task { await self.drain() } }
        }
        return result as! T  // the operation's own body produced it
    }

    private func drain() async {
        while true {
            let batch = state.withLock { s -> [Operation] in
                let n = min(s.queued.count, maxBatch)
                let taken = Array(s.queued.prefix(n))
                s.queued.removeFirst(n)
                if taken.isEmpty { s.draining = false }
                return taken
            }
            if batch.isEmpty { return }
            let bodies = batch.map(\.body)
            do {
                let results = try await database.write { tx in try bodies.map { try $0(tx) } }
                for (op, result) in zip(batch, results) { op.continuation.resume(returning: result) }
            } catch {
                for op in batch {
                    let body = op.body
                    do {
                        op.continuation.resume(returning: try await database.write { tx in try body(tx) })
                    } catch {
                        op.continuation.resume(throwing: error)
                    }
                }
            }
        }
    }
}
