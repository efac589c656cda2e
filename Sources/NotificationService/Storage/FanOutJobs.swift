import Storage

/// The job tables of the fan-out worker (`fanout_jobs`, `purge_jobs`) and the mark that a
/// post's fan-out started (`posts.fanned_out`): every statement on them, in the caller's
/// transaction (`FanOutWorker` decides what to run).
enum FanOutJobs {
    /// Marks post `post` as fanned out. - Returns: whether this call marked it (false: its
    /// fan-out started before). - Throws: `DatabaseError`.
    static func markFannedOut(post: Int64, in tx: Transaction) throws -> Bool {
        try tx.query("UPDATE posts SET fanned_out = 1 WHERE key = \(post) AND fanned_out = 0")
        return tx.connection.changes == 1
    }

    /// Records the rest of `job`'s fan-out, after follower key `after`, for the worker (nothing
    /// when the post's job is recorded already). - Throws: `DatabaseError`.
    static func record(_ job: FanOutJob, after: Int64, in tx: Transaction) throws {
        try tx.query(
            """
            INSERT INTO fanout_jobs(post, owner, created_at, after_follower)
                VALUES (\(job.post), \(job.owner), \(job.createdAt), \(after))
            ON CONFLICT DO NOTHING
            """)
    }

    /// The oldest fan-out job (SQLite's rowid, PostgreSQL's identity column `position`) whose
    /// owner is not hidden (a suspended owner's fan-outs wait: `AccountStates`), with the
    /// follower key it stopped at; on PostgreSQL one no other replica's transaction holds (it is
    /// then held until `tx` ends). Nil when none is waiting. - Throws: `DatabaseError`,
    /// `RowError`.
    static func next(in tx: Transaction) throws -> (job: FanOutJob, after: Int64)? {
        guard
            let row = try tx.connection.queryOne(
                """
                SELECT j.post, j.owner, j.created_at, j.after_follower, j.skip_notified, p.id AS post_id,
                    p.thumbnail_url, i.id AS owner_id
                FROM fanout_jobs j JOIN posts p ON p.key = j.post JOIN identities i ON i.key = j.owner
                WHERE \(AccountStates.active("j.owner"))
                ORDER BY j.\(SQL.insertionOrder) LIMIT 1\(SQL.forUpdateSkipLocked(of: "j"))
                """)
        else { return nil }
        let job = FanOutJob(
            post: try row.int64("post"), postId: try row.string("post_id"), owner: try row.int64("owner"),
            ownerId: try row.string("owner_id"), thumbnailURL: try row.string("thumbnail_url"),
            createdAt: try row.int64("created_at"), skipNotified: try row.bool("skip_notified"))
        return (job, try row.int64("after_follower"))
    }

    /// Moves post `post`'s fan-out job on to follower key `after`. - Throws: `DatabaseError`.
    static func advance(post: Int64, to after: Int64, in tx: Transaction) throws {
        try tx.query("UPDATE fanout_jobs SET after_follower = \(after) WHERE post = \(post)")
    }

    /// Removes post `post`'s fan-out job (done, or cancelled by the post's deletion).
    /// - Throws: `DatabaseError`.
    static func remove(post: Int64, in tx: Transaction) throws {
        try tx.query("DELETE FROM fanout_jobs WHERE post = \(post)")
    }

    /// Whether `owner` has `notifyPosts` followers after key `after`. - Throws: `DatabaseError`.
    static func hasFollowers(of owner: Int64, after: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM edges WHERE followee = \(owner) AND notify_posts = 1 AND follower > \(after) LIMIT 1")
    }

    /// Records that post `post`'s notifications are still to be removed (nothing when it is
    /// recorded already). - Throws: `DatabaseError`.
    static func recordPurge(post: Int64, in tx: Transaction) throws {
        try tx.query("INSERT INTO purge_jobs(post) VALUES (\(post)) ON CONFLICT DO NOTHING")
    }

    /// The post of the oldest purge job, on PostgreSQL one no other replica's transaction holds
    /// (held until `tx` ends); nil when none is waiting. - Throws: `DatabaseError`.
    static func nextPurge(in tx: Transaction) throws -> Int64? {
        try tx.connection.scalar(
            "SELECT post FROM purge_jobs ORDER BY \(SQL.insertionOrder) LIMIT 1\(SQL.forUpdateSkipLocked)")
    }

    /// Removes post `post`'s purge job (done). - Throws: `DatabaseError`.
    static func removePurge(post: Int64, in tx: Transaction) throws {
        try tx.query("DELETE FROM purge_jobs WHERE post = \(post)")
    }
}
