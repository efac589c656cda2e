import Storage

/// The reads of the retention sweep (`RetentionPruner` decides what goes; the rows go through
/// `NotificationRemoval`), on the caller's connection.
enum Retention {
    /// The next recipient after key `after` with merged notifications: one seek in the
    /// primary key; nil when none is left. - Throws: `DatabaseError`.
    static func nextRecipient(after: Int64, on c: DatabaseConnection) throws -> Int64? {
        try c.scalar("SELECT recipient FROM notifications WHERE recipient > \(after) ORDER BY recipient LIMIT 1")
    }

    /// The oldest seq of `recipient` in the merged table and its newest in either table, nil
    /// when the merged table holds none of its rows. Every seq in `recent_notifications` is
    /// above every seq of the recipient in `notifications` (new rows take the head + 1; the
    /// merge moves whole ranges in order), so the oldest is there and the newest is the head of
    /// both. - Throws: `DatabaseError`, `RowError`.
    static func seqRange(of recipient: Int64, on c: DatabaseConnection) throws -> (oldest: Int64, newest: Int64)? {
        guard
            let range = try c.queryOne(
                """
                SELECT (SELECT MIN(seq) FROM notifications WHERE recipient = \(recipient)) AS oldest,
                    \(SQL.greatest)(
                        COALESCE((SELECT MAX(seq) FROM notifications WHERE recipient = \(recipient)), 0),
                        COALESCE((SELECT MAX(seq) FROM recent_notifications WHERE recipient = \(recipient)), 0)) AS newest
                """),
            let oldest = try range.optionalInt64("oldest")
        else { return nil }
        return (oldest, try range.int64("newest"))
    }

    /// The `count`-th newest seq of `recipient` (1: the newest), nil when it has fewer.
    /// - Throws: `DatabaseError`.
    static func seq(newest count: Int, of recipient: Int64, on c: DatabaseConnection) throws -> Int64? {
        try c.scalar(
            "SELECT seq FROM all_notifications WHERE recipient = \(recipient) ORDER BY seq DESC LIMIT 1 OFFSET \(count - 1)")
    }

    /// When `recipient`'s oldest merged notification was made (Unix ms), nil when none.
    /// - Throws: `DatabaseError`.
    static func oldestTime(of recipient: Int64, on c: DatabaseConnection) throws -> Int64? {
        try c.scalar("SELECT created_at FROM notifications WHERE recipient = \(recipient) ORDER BY seq LIMIT 1")
    }

    /// `recipient`'s rows with a seq below `seq` and, when `createdBefore` (Unix ms) is given,
    /// made before it, ready for `NotificationRemoval.remove`. - Throws: `DatabaseError`.
    static func rows(of recipient: Int64, below seq: Int64, createdBefore: Int64? = nil, on c: DatabaseConnection)
        throws -> [RemovedRow]
    {
        if let createdBefore {
            return try NotificationRemoval.rows(
                where: "recipient = \(recipient) AND seq < \(seq) AND created_at < \(createdBefore)", on: c)
        }
        return try NotificationRemoval.rows(where: "recipient = \(recipient) AND seq < \(seq)", on: c)
    }
}
