import ServiceKit
import Storage
import Support
import Wire

/// Moves new notifications from `recent_notifications` into `notifications` in the background
/// (see `NotificationSchema`): every `intervalMs` (`NOTIFICATION_MERGE_INTERVAL_MS`, default
/// 10,000), one pass over the rows present when it starts, in (recipient, seq) order, `batch`
/// rows per transaction (`NOTIFICATION_MERGE_BATCH`, default 500), yielding between them so
/// requests, events and fan-outs go on. Rows written meanwhile wait for the next pass, so
/// several fan-outs reach each recipient's pages of the big table in one write. A pass stops
/// while a fan-out or purge job is pending (`fanout_jobs`, `purge_jobs`) and the next pass
/// takes the rest: merging beside a large fan-out doubled the writes it waits on (a
/// 1,000,000-follower fan-out took 11.7 s with a 470,000-row merge interleaved).
///
/// Readers see both tables (`all_notifications`), and a row is deleted from the recent table
/// in the transaction that copies it, so a read never misses or doubles one.
final class RecentMerger: Service {
    let database: Database
    let intervalMs: Int64
    let batch: Int
    let logger: Logger

    init(database: Database, intervalMs: Int64, batch: Int, logger: Logger) {
        self.database = database
        self.intervalMs = intervalMs
        self.batch = batch
        self.logger = logger
    }

    /// Merges every `intervalMs` until cancelled.
    func run() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(intervalMs))
            if Task.isCancelled { break }
            do {
                let started = Timestamp.nowMs()
                let moved = try await pass()
                if moved > 0 {
                    logger.info(
                        "notifications.merged", metadata: ["rows": "\(moved)", "ms": "\(Timestamp.nowMs() - started)"])
                }
            } catch {
                logger.error("notifications.merge_failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// One pass: moves the rows up to the (recipient, seq) that was last when it started.
    /// - Returns: how many rows were moved.
    func pass() async throws -> Int {
        guard let last = try await database.read({ try RecentMerge.last(on: $0) }) else { return 0 }
        var after: (Int64, Int64) = (Int64.min, Int64.min)
        var moved = 0
        while !Task.isCancelled {
            let (count, reached) = try await step(after: after, upTo: last)
            moved += count
            guard let reached, reached < last else { break }
            after = reached
            await Task.yield()
        }
        return moved
    }

    /// Moves up to `batch` rows after `after` and not after `last`, in one transaction; none
    /// while a fan-out or purge job is pending.
    /// - Returns: how many, and the last (recipient, seq) moved (nil: none was left, or a job
    ///   is pending).
    func step(after: (Int64, Int64), upTo last: (Int64, Int64)) async throws -> (Int, (Int64, Int64)?) {
        let batch = self.batch
        return try await database.write { tx in
            if try RecentMerge.jobsPending(on: tx.connection) { return (0, nil) }
            let keys = try RecentMerge.keys(after: after, upTo: last, limit: batch, on: tx.connection)
            guard let first = keys.first, let end = keys.last else { return (0, nil) }
            try RecentMerge.move(from: first, to: end, in: tx)
            return (keys.count, end)
        }
    }
}
