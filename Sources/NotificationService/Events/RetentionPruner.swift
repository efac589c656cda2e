import ServiceKit
import Storage
import Support
import Wire

/// How long notifications are kept: at most `count` per recipient (the newest) and none older
/// than `maxAgeMs`, except that a recipient's newest notification is never removed for its age
/// (it carries the head seq). Configured by `NOTIFICATION_RETENTION_DAYS` (default 90) and
/// `NOTIFICATION_RETENTION_COUNT` (default 1,000).
struct RetentionPolicy: Sendable, Equatable {
    var maxAgeMs: Int64
    var count: Int

    static let `default` = RetentionPolicy(maxAgeMs: 90 * 86_400_000, count: 1_000)
}

/// Prunes notifications past the retention policy in the background: it walks the recipients of
/// the merged table (`notifications`; new rows reach it within a merge interval) in key order, `recipientsPerTransaction` at a time (one short write transaction each, so writes
/// and fan-outs go on between them), and starts a new sweep every `intervalMs`.
///
/// Per recipient it costs a few index seeks when there is nothing to prune: the oldest and
/// newest seq and the oldest row's time; only a recipient with more than `count` seqs in that
/// range or an expired oldest row has rows deleted, through `NotificationRemoval` (their groups
/// lose them, the badge forgets them).
final class RetentionPruner: Service {
    let database: Database
    let policy: RetentionPolicy
    let intervalMs: Int64
    let recipientsPerTransaction: Int
    let logger: Logger
    let now: @Sendable () -> Int64

    init(
        database: Database, policy: RetentionPolicy, intervalMs: Int64, recipientsPerTransaction: Int = 500,
        logger: Logger, now: @escaping @Sendable () -> Int64 = { Timestamp.nowMs() }
    ) {
        self.database = database
        self.policy = policy
        self.intervalMs = intervalMs
        self.recipientsPerTransaction = recipientsPerTransaction
        self.logger = logger
        self.now = now
    }

    /// Sweeps every `intervalMs` until cancelled.
    func run() async {
        while !Task.isCancelled {
            do {
                let pruned = try await sweep()
                if pruned > 0 { logger.info("retention.pruned", metadata: ["notifications": "\(pruned)"]) }
            } catch {
                logger.error("retention.failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .milliseconds(intervalMs))
        }
    }

    /// One pass over every recipient. - Returns: how many notifications were deleted.
    func sweep() async throws -> Int {
        var after: Int64 = 0
        var total = 0
        while !Task.isCancelled {
            let (last, deleted) = try await pruneBatch(after: after)
            total += deleted
            guard let last else { break }
            after = last
            await Task.yield()
        }
        return total
    }

    /// Prunes the recipients after key `after`, at most `recipientsPerTransaction`, in one
    /// transaction. - Returns: the last recipient key visited (nil when none was left) and how
    /// many notifications were deleted.
    func pruneBatch(after: Int64) async throws -> (last: Int64?, deleted: Int) {
        let policy = self.policy
        let cutoff = now() - policy.maxAgeMs
        let limit = recipientsPerTransaction
        return try await database.write { tx in
            let c = tx.connection
            var recipient = after
            var deleted = 0
            var visited = 0
            while visited < limit {
                // The next recipient with notifications.
                guard let next = try Retention.nextRecipient(after: recipient, on: c) else { return (nil, deleted) }
                recipient = next
                visited += 1
                guard let (oldest, newest) = try Retention.seqRange(of: recipient, on: c) else { continue }
                if newest - oldest + 1 > Int64(policy.count) {
                    // The count-th newest seq: everything older goes.
                    if let keepFrom = try Retention.seq(newest: policy.count, of: recipient, on: c) {
                        let rows = try Retention.rows(of: recipient, below: keepFrom, on: c)
                        try NotificationRemoval.remove(rows, in: tx)
                        deleted += rows.count
                    }
                }
                if let oldestTime = try Retention.oldestTime(of: recipient, on: c), oldestTime < cutoff {
                    let rows = try Retention.rows(of: recipient, below: newest, createdBefore: cutoff, on: c)
                    try NotificationRemoval.remove(rows, in: tx)
                    deleted += rows.count
                }
            }
            return (recipient, deleted)
        }
    }
}
