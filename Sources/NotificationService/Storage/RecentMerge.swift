import Storage

/// The statements of the merge from `recent_notifications` into `notifications` (`RecentMerger`
/// decides when and how much), on the caller's connection or in its transaction. Keys are
/// (recipient, seq) pairs, compared as rows.
enum RecentMerge {
    /// The last (recipient, seq) in the recent table, nil when it is empty.
    /// - Throws: `DatabaseError`, `RowError`.
    static func last(on c: DatabaseConnection) throws -> (Int64, Int64)? {
        guard
            let row = try c.queryOne(
                "SELECT recipient, seq FROM recent_notifications ORDER BY recipient DESC, seq DESC LIMIT 1")
        else { return nil }
        return (try row.int64("recipient"), try row.int64("seq"))
    }

    /// Whether a fan-out or purge job is waiting (the merge stands aside while one is; not for
    /// the fan-out of a hidden owner, which waits for the suspension's end: `FanOutJobs.next`).
    /// - Throws: `DatabaseError`.
    static func jobsPending(on c: DatabaseConnection) throws -> Bool {
        try c.exists(
            """
            SELECT 1 FROM fanout_jobs j WHERE \(AccountStates.active("j.owner")) UNION ALL SELECT 1 FROM purge_jobs
            """)
    }

    /// The keys in the recent table after `after` and not after `last`, in order, at most `limit`.
    /// - Throws: `DatabaseError`.
    static func keys(after: (Int64, Int64), upTo last: (Int64, Int64), limit: Int, on c: DatabaseConnection) throws
        -> [(Int64, Int64)]
    {
        try c.integerPairs(
            """
            SELECT recipient, seq FROM recent_notifications
            WHERE (recipient, seq) > (\(after.0), \(after.1)) AND (recipient, seq) <= (\(last.0), \(last.1))
            ORDER BY recipient, seq LIMIT \(limit)
            """)
    }

    /// Moves the rows from key `first` to key `end` (both included) into the big table, raising
    /// each recipient's `merged_head` to its newest moved seq (so that the next seq is never
    /// looked up in the big table: `NotificationWriter.head`), in `tx`.
    /// - Throws: `DatabaseError`.
    static func move(from first: (Int64, Int64), to end: (Int64, Int64), in tx: Transaction) throws {
        let range: SQL = "(recipient, seq) >= (\(first.0), \(first.1)) AND (recipient, seq) <= (\(end.0), \(end.1))"
        try tx.query(
            """
            INSERT INTO notifications(recipient, seq, type, actor, post, once, detail, created_at, grp)
            SELECT recipient, seq, type, actor, post, once, detail, created_at, grp FROM recent_notifications
            WHERE \(range) ORDER BY recipient, seq
            """)
        try tx.query(
            """
            INSERT INTO recipients(recipient, merged_head)
            SELECT recipient, MAX(seq) FROM recent_notifications
            WHERE \(range) GROUP BY recipient
            ON CONFLICT(recipient) DO UPDATE SET merged_head = \(SQL.greatest)(
                recipients.merged_head, excluded.merged_head)
            """)
        try tx.query("DELETE FROM recent_notifications WHERE \(range)")
    }
}
