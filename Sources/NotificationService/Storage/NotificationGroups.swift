import Shared

/// Upkeep of `notification_groups` (see `NotificationGroupSchema`): every statement that writes
/// a group row, in the caller's transaction.
enum NotificationGroups {
    /// Milliseconds in a UTC day: a follow's group is its `created_at / msPerDay`.
    static let msPerDay: Int64 = 86_400_000

    /// The group of a new row within its type: the post key of a like or comment, the UTC day of
    /// a follow, nil (never grouped) for a tag or a post.
    static func grp(type: NotificationType, post: Int64?, createdAt: Int64) -> Int64? {
        switch type {
        case .like, .comment: post
        case .follow: createdAt / msPerDay
        case .tag, .post: nil
        }
    }

    /// Adds the new row `seq` (by `actor`, at `createdAt` Unix ms) to its group: count + 1,
    /// newest member and position = `seq`, `actor` first among the 3 newest distinct actors.
    /// One upsert (ON CONFLICT DO UPDATE: two replicas adding to one group at once serialise on
    /// its row). - Throws: the engine's error.
    static func add(
        recipient: Int64, type: NotificationType, grp: Int64, seq: Int64, actor: Int64, createdAt: Int64, detail: String?,
        in tx: Transaction
    ) throws {
        try tx.query(
            """
            INSERT INTO notification_groups(recipient, type, grp, count, latest_seq, latest_at, position, actor1, detail)
            VALUES (?1, ?2, ?3, 1, ?4, ?5, ?4, ?6, ?7)
            ON CONFLICT(recipient, type, grp) DO UPDATE SET count = notification_groups.count + 1,
                latest_seq = excluded.latest_seq, latest_at = excluded.latest_at, position = excluded.position,
                actor1 = excluded.actor1,
                actor2 = CASE WHEN notification_groups.actor1 = excluded.actor1 THEN notification_groups.actor2
                    ELSE notification_groups.actor1 END,
                actor3 = CASE WHEN notification_groups.actor1 = excluded.actor1 OR notification_groups.actor2 = excluded.actor1
                    THEN notification_groups.actor3 ELSE notification_groups.actor2 END,
                detail = COALESCE(excluded.detail, notification_groups.detail)
            """, [recipient, type.rawValue, grp, seq, createdAt, actor, detail])
    }

    /// A member of a group as `newest` reads it.
    struct Member {
        var seq: Int64
        var actor: Int64
        var createdAt: Int64
    }

    /// The newest members of group (`recipient`, `type`, `grp`) with seq ≤ `upTo`, at most
    /// `limit`, newest first: one range of the grp index in each notification table.
    /// - Throws: the engine's error.
    static func newest(
        recipient: Int64, type: Int64, grp: Int64, upTo: Int64 = Int64.max, limit: Int, on c: DatabaseConnection
    ) throws -> [Member] {
        var members: [Member] = []
        // SQLite without statistics would take the primary key's (recipient) range, a scan of
        // every notification of the recipient: the grp index is named.
        for table in ["recent_notifications", "notifications"] {
            for r in try c.query(
                """
                SELECT seq, actor, created_at FROM \(table) \(c.sql(sqlite: "INDEXED BY \(table)_by_group", postgres: ""))
                WHERE recipient = ? AND type = ? AND grp = ? AND seq <= ? ORDER BY seq DESC LIMIT ?
                """, [recipient, type, grp, upTo, limit])
            {
                members.append(Member(seq: try r.int64("seq"), actor: try r.int64("actor"), createdAt: try r.int64("created_at")))
            }
        }
        return Array(members.sorted { $0.seq > $1.seq }.prefix(limit))
    }

    /// Takes `removed` members out of group (`recipient`, `type`, `grp`) after their rows were
    /// deleted: count − `removed`, the group deleted when none is left, else its newest member
    /// and 3 newest distinct actors read again from the grp index (a few rows; `position` stays).
    /// - Throws: the engine's error.
    static func remove(_ removed: Int, recipient: Int64, type: Int64, grp: Int64, in tx: Transaction) throws {
        let c = tx.connection
        // Up to 3 distinct actors among the newest: an actor commenting many times shows once.
        let members = try newest(recipient: recipient, type: type, grp: grp, limit: 32, on: c)
        let key: [any SQLBindable] = [recipient, type, grp]
        guard let latest = members.first else {
            try tx.query("DELETE FROM notification_groups WHERE recipient = ? AND type = ? AND grp = ?", key)
            return
        }
        var actors: [Int64?] = []
        for m in members where !actors.contains(m.actor) && actors.count < 3 { actors.append(m.actor) }
        while actors.count < 3 { actors.append(nil) }
        try tx.query(
            """
            UPDATE notification_groups SET count = \(c.sql(sqlite: "MAX", postgres: "GREATEST"))(count - ?4, 1),
                latest_seq = ?5, latest_at = ?6, actor1 = ?7, actor2 = ?8, actor3 = ?9
            WHERE recipient = ?1 AND type = ?2 AND grp = ?3
            """, key + [Int64(removed), latest.seq, latest.createdAt, actors[0], actors[1], actors[2]])
    }
}
