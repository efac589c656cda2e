import Messages
import ServiceKit
import Storage
import Support
import Wire

/// A new post's notification to the owner's `notifyPosts` followers.
struct FanOutJob: Sendable {
    var post: Int64
    var postId: String
    var owner: Int64
    var ownerId: String
    var thumbnailURL: String
    /// Unix ms: the post's event time, the notifications' `createdAt`.
    var createdAt: Int64
    /// Skip followers who already have a notification about the post (see `NotificationSchema`).
    var skipNotified = false
    /// The owner's public fields from the event, for the live messages of the batch done in the
    /// event's transaction (not recorded: later batches go without, and the gateway looks the
    /// owner up).
    var ownerUser: PublicUser? = nil

    /// The fan-out of post `postId` by `ownerId`, their keys made or found in `tx`.
    /// - Parameters:
    ///   - createdAt: Unix ms.
    ///   - ownerUser: the owner as the event carried it (nil: none, or not this owner).
    /// - Throws: the engine's error.
    static func make(
        postId: String, ownerId: String, thumbnailURL: String, createdAt: Int64, ownerUser: PublicUser? = nil,
        in tx: Transaction
    ) throws -> FanOutJob {
        let owner = try Keys.user(ownerId, in: tx)
        return FanOutJob(
            post: try Keys.post(postId, thumbnailURL: thumbnailURL, owner: owner, in: tx), postId: postId,
            owner: owner, ownerId: ownerId, thumbnailURL: thumbnailURL, createdAt: createdAt,
            ownerUser: ownerUser?.id == ownerId ? ownerUser : nil)
    }
}

/// Carries out the work a single event starts but that may be too large for one transaction:
/// a new post's fan-out to its owner's `notifyPosts` followers, and the removal of a deleted
/// post's notifications. Each runs in transactions of at most `batch` rows, so requests and
/// other events are served between them however large the job.
///
/// A job that fits one batch is done in the transaction of its event. A larger one is
/// recorded (`fanout_jobs`, `purge_jobs`) in that transaction and carried on here, batch by
/// batch, each batch moving the job's position in the same transaction (follower-key order:
/// neighbouring index pages), so a restart resumes exactly where it stopped: nobody is
/// notified twice or skipped. Fan-outs go before purges (someone is waiting for them).
final class FanOutWorker: Service {
    let database: Database
    let notifications: NotificationWriter
    /// Rows per transaction.
    let batch: Int
    let logger: Logger
    private let doorbell = Doorbell()
    /// Fan-outs under way in this process: when each started (Unix ms) and the followers
    /// reached so far, for the `fanout.done` log line.
    private let progress = Locked<[Int64: (startedMs: Int64, reached: Int)]>([:])

    init(database: Database, notifications: NotificationWriter, batch: Int, logger: Logger) {
        self.database = database
        self.notifications = notifications
        self.batch = batch
        self.logger = logger
    }

    /// Starts the fan-out of `job` in `tx`: its first batch at once; the rest recorded for the
    /// worker (woken when `tx` commits). A post's fan-out starts once: the post is marked in the
    /// same transaction, so a repeated event (a replay after a lost cursor) notifies nobody twice.
    ///
    /// While the owner is hidden (suspended, or being deleted: `AccountStates`) the whole fan-out
    /// is recorded and waits (`FanOutJobs.next` passes it over) until the suspension is lifted; an
    /// erasure removes it.
    func start(_ job: FanOutJob, in tx: Transaction) throws {
        guard try FanOutJobs.markFannedOut(post: job.post, in: tx) else { return }
        if try AccountStates.isHidden(job.owner, on: tx.connection) {
            try FanOutJobs.record(job, after: 0, in: tx)
            return
        }
        let started = Timestamp.nowMs()
        let (count, last) = try notifications.fanOut(job, after: 0, limit: batch, in: tx)
        guard count == batch, let last, try FanOutJobs.hasFollowers(of: job.owner, after: last, on: tx.connection) else {
            if count > 0 {
                logger.debug(
                    "fanout.done",
                    metadata: ["post": job.postId, "followers": "\(count)", "ms": "\(Timestamp.nowMs() - started)"])
            }
            return
        }
        let progress = self.progress
        tx.onCommit { progress.withLock { $0[job.post] = (started, count) } }
        try FanOutJobs.record(job, after: last, in: tx)
        wakeOnCommit(tx)
    }

    /// Removes the notifications about `post` in `tx`, or the first batch of them and records
    /// the rest for the worker; cancels the post's fan-out.
    func purge(post: Int64, in tx: Transaction) throws {
        try FanOutJobs.remove(post: post, in: tx)
        if try NotificationWriter.delete(aboutPost: post, limit: batch, in: tx) == batch {
            try FanOutJobs.recordPurge(post: post, in: tx)
            wakeOnCommit(tx)
        }
    }

    private func wakeOnCommit(_ tx: Transaction) {
        let doorbell = self.doorbell
        tx.onCommit { doorbell.ring() }
    }

    /// Runs jobs until none is left, then waits for the next (or a 5 s tick); until cancelled.
    func run() async {
        // Jobs left by a previous run (or by the replica that was active before), then
        // whenever a commit starts one, and every 5 s.
        var retryMs = 0  // after a failure: 100 ms, doubling to 5 s
        while !Task.isCancelled {
            do {
                while !Task.isCancelled, try await step() {}
                retryMs = 0
            } catch {
                logger.error("jobs.failed", metadata: ["error": "\(error)"])
                retryMs = min(max(retryMs * 2, 100), 5_000)
            }
            await doorbell.wait(timeoutMs: retryMs > 0 ? retryMs : 5_000)
        }
    }

    func step() async throws -> Bool {
        let batch = self.batch
        let logger = self.logger
        let notifications = self.notifications
        let progress = self.progress
        return try await database.write { tx -> Bool in
            let c = tx.connection
            // Oldest first.
            if let (job, after) = try FanOutJobs.next(in: tx) {
                let (count, last) = try notifications.fanOut(
                    job, after: after, limit: batch, in: tx)
                let more = try last.map { try FanOutJobs.hasFollowers(of: job.owner, after: $0, on: c) } ?? false
                let reached = progress.withLock { p -> (startedMs: Int64, reached: Int)? in
                    p[job.post]?.reached += count
                    return p[job.post]
                }
                if count < batch || !more {
                    try FanOutJobs.remove(post: job.post, in: tx)
                    progress.withLock { _ = $0.removeValue(forKey: job.post) }
                    // Followers and time since the event, as far as this process saw the job.
                    logger.info(
                        "fanout.done",
                        metadata: [
                            "post": job.postId, "followers": reached.map { "\($0.reached)" } ?? "?",
                            "ms": reached.map { "\(Timestamp.nowMs() - $0.startedMs)" } ?? "?",
                        ])
                } else {
                    try FanOutJobs.advance(post: job.post, to: last!, in: tx)
                }
                return true
            }
            if let post = try FanOutJobs.nextPurge(in: tx) {
                if try NotificationWriter.delete(aboutPost: post, limit: batch, in: tx) < batch {
                    try FanOutJobs.removePurge(post: post, in: tx)
                }
                return true
            }
            return false
        }
    }
}
