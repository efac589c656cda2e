import Storage

/// An account whose notifications `AccountWorker` is moving (see `AccountJobs`).
struct AccountJob: Sendable, Equatable {
    /// `identities.key`.
    var user: Int64
    /// AuthService's id.
    var userId: String
    /// Where its erasure stands (`AccountErasure.Phase`; 0 until the account is erased).
    var phase: Int64
    /// The phase's key cursor (0: from the start).
    var lastKey: Int64
    /// Unix ms: when the job was added (or its erasure started).
    var startedAt: Int64
}

/// The work queue of `AccountWorker` (`account_jobs`, see `AccountSchema`): one row per account
/// whose state changed and whose notifications are still to be moved aside, brought back or
/// erased. Every statement on it, in the caller's transaction.
enum AccountJobs {
    /// Adds `user` (nothing when it is queued already: the worker reads the state at each batch).
    /// - Parameter nowMs: Unix ms. - Throws: `DatabaseError`.
    static func add(_ user: Int64, nowMs: Int64, in tx: Transaction) throws {
        try tx.query(
            """
            INSERT INTO account_jobs(user_key, started_at) VALUES (\(user), \(nowMs))
            ON CONFLICT(user_key) DO NOTHING
            """)
    }

    /// Starts `user`'s erasure from its first phase (a hold under way becomes the erasure).
    /// - Parameter nowMs: Unix ms. - Throws: `DatabaseError`.
    static func startErasure(_ user: Int64, nowMs: Int64, in tx: Transaction) throws {
        try tx.query(
            """
            INSERT INTO account_jobs(user_key, started_at) VALUES (\(user), \(nowMs))
            ON CONFLICT(user_key) DO UPDATE SET phase = 0, last_key = 0, started_at = excluded.started_at
            """)
    }

    /// The job with the fewest batches taken (a new one first, and no account's large erasure
    /// holds up another's: each batch moves its job back, `advance`); on PostgreSQL one no other
    /// replica's transaction holds (then held until `tx` ends). Nil when none is waiting.
    /// - Throws: `DatabaseError`, `RowError`.
    static func next(in tx: Transaction) throws -> AccountJob? {
        guard
            let row = try tx.connection.queryOne(
                """
                SELECT j.user_key, s.user_id AS id, j.phase, j.last_key, j.started_at FROM account_jobs j
                JOIN account_states s ON s.user_key = j.user_key
                ORDER BY j.turn, j.user_key LIMIT 1\(SQL.forUpdateSkipLocked(of: "j"))
                """)
        else { return nil }
        return AccountJob(
            user: try row.int64("user_key"), userId: try row.string("id"), phase: try row.int64("phase"),
            lastKey: try row.int64("last_key"), startedAt: try row.int64("started_at"))
    }

    /// Records a batch of `user`'s job: its erasure's place, one turn more. - Throws: `DatabaseError`.
    static func advance(_ user: Int64, phase: Int64, lastKey: Int64, in tx: Transaction) throws {
        try tx.query(
            "UPDATE account_jobs SET phase = \(phase), last_key = \(lastKey), turn = turn + 1 WHERE user_key = \(user)")
    }

    /// Removes `user`'s job (done). - Throws: `DatabaseError`.
    static func remove(_ user: Int64, in tx: Transaction) throws {
        try tx.query("DELETE FROM account_jobs WHERE user_key = \(user)")
    }

    /// Whether `user` has a job waiting. - Throws: `DatabaseError`.
    static func pending(_ user: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM account_jobs WHERE user_key = \(user)")
    }
}
