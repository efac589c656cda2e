import Foundation
import Media
import Messages
import ServiceKit
import Storage
import Support
import Wire

/// Step 2 of the deletion saga (`Auth` in Messages): erases a deleting account's data from
/// ProfileService, one short transaction per batch, then emits `profile.account.erased`.
///
/// Each batch takes the first of these that still has rows of the account, up to `batch` rows:
///
/// 1. its likes (each liked post's `like_count` goes down in the same transaction);
/// 2. its comments (`comment_count` goes down);
/// 3. its tags on posts;
/// 4. its posts, oldest first, each with the likes, comments and tags others left on it (a post
///    with more than a batch of them takes several batches), `profile.post.deleted` for each
///    (NotificationService removes their notifications, as when the owner deletes one);
/// 5. its uploads and profile photo: the rows go, their ids are kept in `erasure_media`;
/// 6. the files of those ids that no other account's row, post or profile uses;
/// 7. its reports: they stay, for the moderators, without the reporter (`reporter_id` NULL);
/// 8. its rows in the follow-graph replica, and its `Idempotency-Key` records.
///
/// When none has rows left, one last transaction deletes the profile and the identity, marks the
/// account `erased` (`AccountStates`) and emits `profile.account.erased`. Every batch is
/// idempotent and the order is found again from the rows themselves, so a process killed at any
/// point goes on where it stopped; a write that slipped in while the account was being erased (a
/// request already under way when its sessions ended) is found by the same walk and erased too.
struct AccountEraser: Service {
    let database: Database
    let files: any MediaStore
    let doorbell: Doorbell
    /// Most rows one transaction deletes (`PROFILE_ERASURE_BATCH`, default 500).
    let batch: Int
    /// How often it looks for work without a ring, in ms.
    let intervalMs: Int
    let logger: Logger
    /// Where a test holds it between batches (`PROFILE_TEST_ERASURE_HOLD_FILE`).
    var hold = TestHold(path: nil)

    /// Erasures started before this many ms ago are logged as late at each batch (1 hour).
    static let lateAfterMs: Int64 = 3_600_000

    typealias Step = AccountErasure.Step

    /// The figures of one account's erasure, logged as `erasure.finished`.
    struct Report: Sendable {
        var batches = 0
        var rows = 0
        /// The longest batch's transaction, in ms.
        var longestBatchMs = 0.0
        var totalMs = 0.0
    }

    func run() async {
        while !Task.isCancelled {
            do {
                while !Task.isCancelled, let userId = try await next() { _ = try await erase(userId) }
                while !Task.isCancelled, let userId = try await database.read({ try EventRedaction.next(on: $0) }) {
                    try await redactEvents(of: userId)
                }
            } catch is CancellationError {
                return
            } catch {
                logger.warning("erasure.failed", metadata: ["error": "\(error)"])
            }
            await doorbell.wait(timeoutMs: intervalMs)
        }
    }

    /// The account whose erasure began first, if any.
    func next() async throws -> String? {
        try await database.read { try AccountErasure.next(on: $0) }
    }

    /// Erases `userId` to the end (or until cancelled).
    /// - Throws: the engine's error, `ServiceError` when a file cannot be removed.
    func erase(_ userId: String) async throws -> Report {
        var report = Report()
        let start = ContinuousClock.now
        while !Task.isCancelled {
            let began = ContinuousClock.now
            let step = try await self.step(userId)
            let ms = Self.ms(ContinuousClock.now - began)
            switch step {
            case .batch(_, let rows):
                report.batches += 1
                report.rows += rows
                report.longestBatchMs = max(report.longestBatchMs, ms)
                logger.debug("erasure.batch", metadata: ["user.id": userId, "step": "\(step)", "ms": "\(ms)"])
                await hold.wait(done: report.batches, logger: logger, job: "profile.erasure")
                await Self.yieldWriter(after: ContinuousClock.now - began)
            case .finished:
                report.totalMs = Self.ms(ContinuousClock.now - start)
                logger.info(
                    "erasure.finished",
                    metadata: [
                        "user.id": userId, "batches": "\(report.batches)", "rows": "\(report.rows)",
                        "longest_batch_ms": String(format: "%.1f", report.longestBatchMs),
                        "total_ms": String(format: "%.0f", report.totalMs),
                    ])
                return report
            case .none:
                return report
            }
        }
        throw CancellationError()
    }

    /// Redacts `userId`'s past events (`EventRedaction`), a window of 20 × `batch` seqs per
    /// transaction. - Returns: how many events were redacted.
    /// - Throws: the engine's error.
    @discardableResult
    func redactEvents(of userId: String) async throws -> Int {
        var total = 0
        let window = batch * 20
        while !Task.isCancelled {
            let began = ContinuousClock.now
            guard let n = try await database.write({ try EventRedaction.step(userId, window: window, in: $0) }) else { break }
            total += n
            await Self.yieldWriter(after: ContinuousClock.now - began)
        }
        logger.info("erasure.events_redacted", metadata: ["user.id": userId, "events": "\(total)"])
        return total
    }

    /// One batch (one transaction) of `userId`'s erasure (`AccountErasure.step`).
    /// - Throws: the engine's error, `ServiceError` when a file cannot be removed (the batch is
    ///   rolled back and tried again on the next run).
    func step(_ userId: String) async throws -> Step {
        let (batch, files) = (self.batch, self.files)
        return try await database.write { try AccountErasure.step(userId, batch: batch, files: files, in: $0) }
    }

    /// Waits as long as the batch just done took, so that an erasure holds the database's
    /// writer at most half of the time and other users' writes (likes, comments) get the rest
    /// (see docs/account-lifecycle.md, "Other users' likes beside a deletion").
    static func yieldWriter(after batch: Duration) async {
        try? await Task.sleep(for: min(batch, .seconds(1)))
    }

    static func ms(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

}
