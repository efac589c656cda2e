import Messages
import ServiceKit
import Support
import Wire

/// Deletes `Idempotency-Key` records older than `IdempotencyKey.retentionMs` (24 h): at start and
/// every `intervalMs`, in batches of `batch` rows, each its own short transaction. Lookups
/// already ignore an expired record (`IdempotencyStore.record`), so the purge only bounds the
/// table; it is safe to run on several replicas at once (a record is deleted once).
struct IdempotencyPurge: Service {
    let store: any IdempotencyStore
    /// ms between runs (`PROFILE_IDEMPOTENCY_PURGE_INTERVAL_MS`).
    let intervalMs: Int
    let logger: Logger
    /// Rows per transaction.
    var batch = 1_000

    func run() async {
        while !Task.isCancelled {
            await purge(nowMs: Timestamp.nowMs())
            try? await Task.sleep(for: .milliseconds(intervalMs))
        }
    }

    /// Deletes every record expired at `nowMs` (ms since 1970). Failures are logged, not thrown:
    /// the next run tries again.
    /// - Returns: how many it deleted.
    @discardableResult
    func purge(nowMs: Int64) async -> Int {
        var total = 0
        do {
            while !Task.isCancelled {
                let deleted = try await store.purge(before: nowMs - IdempotencyKey.retentionMs, limit: batch)
                total += deleted
                if deleted < batch { break }
            }
        } catch {
            logger.warning("idempotency.purge_failed", metadata: ["error": "\(error)"])
        }
        if total > 0 { logger.info("idempotency.purged", metadata: ["count": "\(total)"]) }
        return total
    }
}
