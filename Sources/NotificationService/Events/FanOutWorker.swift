import Shared

/// A new post's notification to the owner's `notifyPosts` followers.
struct FanOutJob: Sendable, RowDecodable {
    var postId: String
    var ownerId: String
    var thumbnailURL: String
    /// RFC 3339: the post's event time, the notifications' `createdAt`.
    var createdAt: String
    /// The last follower reached (follower-id order; `""` before the first).
    var afterFollower: String = ""

    init(postId: String, ownerId: String, thumbnailURL: String, createdAt: String) {
        self.postId = postId
        self.ownerId = ownerId
        self.thumbnailURL = thumbnailURL
        self.createdAt = createdAt
    }

    init(row: Row) throws {
        postId = try row.string("post_id")
        ownerId = try row.string("owner_id")
        thumbnailURL = try row.string("thumbnail_url")
        createdAt = try row.string("created_at")
        afterFollower = try row.string("after_follower")
    }
}

/// Delivers new posts to followers with `notifyPosts` in transactions of at most `batch`
/// recipients, so requests and other events are served between them however large the fan-out.
///
/// A fan-out that fits one batch is written in the transaction of the `profile.post.created`
/// event itself. A larger one is recorded as a job (`fanout_jobs`) in that transaction and
/// carried on here, batch by batch, each batch advancing the job's position in the same
/// transaction, in follower-id order (neighbouring index pages): a restart resumes where it
/// stopped, and the notifications' dedup key absorbs any repeat.
final class FanOutWorker: Service {
    let database: Database
    /// Recipients per transaction.
    let batch: Int
    let logger: Logger
    private let (doorbell, ring) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    init(database: Database, batch: Int, logger: Logger) {
        self.database = database
        self.batch = batch
        self.logger = logger
    }

    /// Starts the fan-out of `job` in `tx`: written at once when it fits one batch, else
    /// recorded for the worker (woken when `tx` commits).
    func start(_ job: FanOutJob, in tx: Transaction) throws {
        let followers = try SQLiteFollowStore.notifyPostsFollowers(
            of: job.ownerId, after: "", limit: batch + 1, on: tx.connection)
        if followers.count <= batch {
            for follower in followers { try Self.notify(follower, of: job, in: tx) }
            return
        }
        try tx.query(
            """
            INSERT OR IGNORE INTO fanout_jobs(post_id, owner_id, thumbnail_url, created_at) VALUES (?, ?, ?, ?)
            """, [job.postId, job.ownerId, job.thumbnailURL, job.createdAt])
        let ring = self.ring
        tx.onCommit { ring.yield() }
    }

    /// Drops the job of a deleted post, in `tx`.
    static func cancel(postId: String, in tx: Transaction) throws {
        try tx.query("DELETE FROM fanout_jobs WHERE post_id = ?", [postId])
    }

    private static func notify(_ recipient: String, of job: FanOutJob, in tx: Transaction) throws {
        try SQLiteNotificationStore.insert(
            NewNotification(
                recipientId: recipient, actorId: job.ownerId, type: "post", objectId: job.postId, detail: nil,
                post: .init(id: job.postId, thumbnailURL: job.thumbnailURL), createdAt: job.createdAt), in: tx)
    }

    /// Runs jobs until none is left, then waits for the next (or a 5 s tick); until cancelled.
    func run() async {
        ring.yield()  // jobs left by a previous run
        var iterator = doorbell.makeAsyncIterator()
        let ring = self.ring
        let tick = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(5))
                ring.yield()
            }
        }
        defer { tick.cancel() }
        while !Task.isCancelled, await iterator.next() != nil {
            do {
                while !Task.isCancelled, try await step() {}
            } catch {
                logger.error("fanout.failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Writes one batch of the oldest job. - Returns: whether there was one.
    func step() async throws -> Bool {
        let batch = self.batch
        let logger = self.logger
        return try await database.write { tx -> Bool in
            guard let job = try tx.connection.queryOne(FanOutJob.self, "SELECT * FROM fanout_jobs ORDER BY rowid LIMIT 1")
            else { return false }
            let followers = try SQLiteFollowStore.notifyPostsFollowers(
                of: job.ownerId, after: job.afterFollower, limit: batch, on: tx.connection)
            for follower in followers { try Self.notify(follower, of: job, in: tx) }
            if followers.count < batch {
                try Self.cancel(postId: job.postId, in: tx)
                logger.info("fanout.done", metadata: ["post": job.postId])
            } else {
                try tx.query(
                    "UPDATE fanout_jobs SET after_follower = ? WHERE post_id = ?", [followers.last!, job.postId])
            }
            return true
        }
    }
}
