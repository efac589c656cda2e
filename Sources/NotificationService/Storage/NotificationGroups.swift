import Storage

/// Upkeep of `notification_groups` (see `NotificationGroupSchema`) beyond the insert trigger
/// that adds each new row to its group: a row's group key, a group's newest members, and the
/// removal of members, in the caller's transaction.
enum NotificationGroups {
    /// Milliseconds in a UTC day: a follow's group is its `created_at / msPerDay`.
    static let msPerDay: Int64 = 86_400_000

    /// The group of a new row within its type: the post key of a like or comment, the UTC day of
    /// a follow, nil (never grouped) for a tag or a post.
    static func grp(type: NotificationType, post: Int64?, createdAt: Int64) -> Int64? {
        switch type {
        case .like, .comment: post
        case .follow: createdAt / msPerDay
        case .tag, .post, .followRequest, .followAccepted, .reportResolved: nil
        }
    }

    /// A member of a group as `newest` reads it.
    struct Member {
        var seq: Int64
        var actor: Int64
        var createdAt: Int64
    }

    /// The newest members of group (`recipient`, `type`, `grp`) with seq ≤ `upTo`, at most
    /// `limit`, newest first: one index range in each notification table.
    /// - Throws: the engine's error.
    static func newest(
        recipient: Int64, type: Int64, grp: Int64, upTo: Int64 = Int64.max, limit: Int, on c: DatabaseConnection
    ) throws -> [Member] {
        var members: [Member] = []
        // Named indexes: SQLite without statistics would take the primary key's (recipient)
        // range, a scan of every notification of the recipient. In the recent table a like or
        // comment group's members are a range of `recent_notifications_by_post` (their grp is
        // the post key), a follow group's of `recent_notifications_follows` (see
        // `NotificationGroupSchema.onInsertMigration`); tags and posts are never grouped.
        let recent: SQL? =
            switch NotificationType(rawValue: type) {
            case .like, .comment:
                """
                SELECT seq, actor, created_at FROM recent_notifications
                    \(SQL.indexedBy("recent_notifications_by_post"))
                WHERE post = \(grp) AND recipient = \(recipient) AND type = \(type) AND seq <= \(upTo)
                ORDER BY seq DESC LIMIT \(limit)
                """
            case .follow:
                """
                SELECT seq, actor, created_at FROM recent_notifications
                    \(SQL.indexedBy("recent_notifications_follows"))
                WHERE type = \(literal: NotificationType.follow.rawValue) AND recipient = \(recipient) AND grp = \(grp)
                    AND seq <= \(upTo)
                ORDER BY seq DESC LIMIT \(limit)
                """
            case .tag, .post, .followRequest, .followAccepted, .reportResolved, nil: nil
            }
        let merged: SQL = """
            SELECT seq, actor, created_at FROM notifications
                \(SQL.indexedBy("notifications_by_group"))
            WHERE recipient = \(recipient) AND type = \(type) AND grp = \(grp) AND seq <= \(upTo) ORDER BY seq DESC
                LIMIT \(limit)
            """
        for sql in [recent, merged].compactMap({ $0 }) {
            for r in try c.query(sql) {
                members.append(Member(seq: try r.int64("seq"), actor: try r.int64("actor"), createdAt: try r.int64("created_at")))
            }
        }
        return Array(members.sorted { $0.seq > $1.seq }.prefix(limit))
    }

    /// Takes `removed` members out of group (`recipient`, `type`, `grp`) after their rows were
    /// deleted: count − `removed`, the group deleted when none is left, else its newest member
    /// and 3 newest distinct actors read again from the grp index (a few rows; `position` stays).
    /// - Parameter actor: the account whose notifications a suspension is holding
    ///   (`AccountHold`): a group it empties leaves its position in `held_groups`, for `restore`.
    /// - Throws: the engine's error.
    static func remove(
        _ removed: Int, recipient: Int64, type: Int64, grp: Int64, holdFor actor: Int64? = nil, in tx: Transaction
    ) throws {
        let c = tx.connection
        // Up to 3 distinct actors among the newest: an actor commenting many times shows once.
        let members = try newest(recipient: recipient, type: type, grp: grp, limit: 32, on: c)
        guard members.first != nil else {
            if let actor {
                try tx.query(
                    """
                    INSERT INTO held_groups(actor, recipient, type, grp, position)
                    SELECT \(actor), recipient, type, grp, position FROM notification_groups
                    WHERE recipient = \(recipient) AND type = \(type) AND grp = \(grp)
                    ON CONFLICT(actor, recipient, type, grp) DO UPDATE
                    SET position = \(SQL.greatest)(held_groups.position, excluded.position)
                    """)
            }
            try tx.query(
                "DELETE FROM notification_groups WHERE recipient = \(recipient) AND type = \(type) AND grp = \(grp)")
            return
        }
        try update(recipient: recipient, type: type, grp: grp, members: members, count: "count - \(Int64(removed))", in: tx)
    }

    /// Puts `restored` members back into group (`recipient`, `type`, `grp`) after their rows were
    /// restored (`AccountHold.restore`): count + `restored`, its newest member and actors read
    /// again, its position the largest of its own, `newest` (the newest restored seq) and the one
    /// kept when the hold of `actor` emptied it (`held_groups`, then forgotten); a group the hold
    /// had deleted comes back with that position, `detail` (a like's post type) and the count.
    /// - Throws: the engine's error.
    static func restore(
        _ restored: Int, recipient: Int64, type: Int64, grp: Int64, newest restoredSeq: Int64, detail: String?,
        heldFor actor: Int64, in tx: Transaction
    ) throws {
        let c = tx.connection
        let members = try newest(recipient: recipient, type: type, grp: grp, limit: 32, on: c)
        let kept =
            try c.scalar(
                """
                SELECT position FROM held_groups WHERE actor = \(actor) AND recipient = \(recipient) AND type = \(type)
                    AND grp = \(grp)
                """) ?? 0
        try tx.query(
            """
            DELETE FROM held_groups WHERE actor = \(actor) AND recipient = \(recipient) AND type = \(type) AND grp = \(grp)
            """)
        guard let latest = members.first else { return }
        let actors = newestActors(members)
        let count = Int64(restored)
        try tx.query(
            """
            INSERT INTO notification_groups(recipient, type, grp, count, latest_seq, latest_at, position, actor1, actor2,
                actor3, detail)
            VALUES (\(recipient), \(type), \(grp), \(count), \(latest.seq), \(latest.createdAt), \(max(kept, restoredSeq)),
                \(actors[0]), \(actors[1]), \(actors[2]), CAST(\(detail) AS TEXT))
            ON CONFLICT(recipient, type, grp) DO UPDATE SET count = notification_groups.count + excluded.count,
                latest_seq = excluded.latest_seq, latest_at = excluded.latest_at,
                position = \(SQL.greatest)(notification_groups.position, excluded.position),
                actor1 = excluded.actor1, actor2 = excluded.actor2, actor3 = excluded.actor3,
                detail = COALESCE(notification_groups.detail, excluded.detail)
            """)
    }

    /// The 3 newest distinct actors of `members` (newest first), nil-padded: an actor commenting
    /// many times shows once.
    private static func newestActors(_ members: [Member]) -> [Int64?] {
        var actors: [Int64?] = []
        for m in members where !actors.contains(m.actor) && actors.count < 3 { actors.append(m.actor) }
        while actors.count < 3 { actors.append(nil) }
        return actors
    }

    /// Sets the group's count to `count` (an SQL expression over its row, at least 1) and its
    /// newest member and actors from `members` (newest first, at least one).
    private static func update(
        recipient: Int64, type: Int64, grp: Int64, members: [Member], count: SQL, in tx: Transaction
    ) throws {
        let latest = members[0]
        let actors = newestActors(members)
        try tx.query(
            """
            UPDATE notification_groups SET count = \(SQL.greatest)(\(count), 1),
                latest_seq = \(latest.seq), latest_at = \(latest.createdAt), actor1 = \(actors[0]), actor2 = \(actors[1]),
                actor3 = \(actors[2])
            WHERE recipient = \(recipient) AND type = \(type) AND grp = \(grp)
            """)
    }
}
