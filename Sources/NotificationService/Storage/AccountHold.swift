import Storage

/// A hidden account's notifications to others (API.md: a suspended or deleted user's
/// notifications to others are hidden; lifting the suspension restores them): moved aside in
/// batches with a removal's corrections, and put back as they were. `AccountWorker` runs these
/// in its transactions; each statement is here.
///
/// - **Hide** (`hide`): up to `limit` of the user's visible notifications to others (every type
///   but `post` through the `*_by_actor` partial indexes; `post` rows through the user's posts,
///   `posts_by_owner`, and the post indexes) leave both notification tables through
///   `BatchRemoval`: their recipients' groups, badges and `head_floor` corrected, their queued
///   pushes dropped. A suspension keeps them in `held_notifications` (and an emptied group's
///   position in `held_groups`); a deletion does not (it is never undone).
/// - **Restore** (`restore`): up to `limit` held rows go back with the same seq and `created_at`:
///   a row at or below its recipient's `merged_head` into `notifications`, a newer one into
///   `recent_notifications` (so every recent seq of a recipient stays above its merged ones, as
///   `RecentMerger` leaves them), there without its group key first (the insert trigger would add
///   it to its group as a new member) and with it right after. Each group gets its members back
///   (`NotificationGroups.restore`: the count, the newest member and actors, the position it had),
///   and a restored row whose tombstone is still in `removed_unread` is unread again (the read
///   mark passed it meanwhile: it comes back read).
enum AccountHold {
    /// Up to `limit` keys (recipient, seq) of `user`'s visible notifications to others: the
    /// recent table first, then the merged one, then the `post` rows of the user's posts.
    /// - Throws: `DatabaseError`.
    static func visibleKeys(by user: Int64, limit: Int, on c: DatabaseConnection) throws -> [(Int64, Int64)] {
        let post = NotificationType.post.rawValue
        var keys: [(Int64, Int64)] = []
        for (table, index): (SQL, String) in [
            ("recent_notifications", "recent_notifications_by_actor"), ("notifications", "notifications_by_actor"),
        ] where keys.count < limit {
            keys += try c.integerPairs(
                """
                SELECT recipient, seq FROM \(table) \(SQL.indexedBy(index))
                WHERE actor = \(user) AND type <> \(literal: post) LIMIT \(limit - keys.count)
                """)
        }
        for table: SQL in ["recent_notifications", "notifications"] where keys.count < limit {
            keys += try c.integerPairs(
                """
                SELECT n.recipient, n.seq FROM posts p JOIN \(table) n ON n.post = p.key
                WHERE p.owner = \(user) AND n.type = \(literal: post) LIMIT \(limit - keys.count)
                """)
        }
        return keys
    }

    /// Hides up to `limit` of `user`'s visible notifications to others, in `tx`: kept in
    /// `held_notifications` when `keep` (a suspension), else removed for good (a deletion).
    /// - Returns: how many were found (fewer than `limit`: none is left). - Throws: `DatabaseError`.
    static func hide(_ user: Int64, keep: Bool, limit: Int, in tx: Transaction) throws -> Int {
        let keys = try NotificationWriter.byKey(tx.connection) { try visibleKeys(by: user, limit: limit, on: tx.connection) }
        try BatchRemoval.remove(keys, holdFor: keep ? user : nil, in: tx)
        return keys.count
    }

    /// A held row as `restore` reads it.
    private struct Held {
        var recipient: Int64
        var seq: Int64
        var type: Int64
        var grp: Int64?
        var detail: String?
    }

    /// Restores up to `limit` of `user`'s held notifications, in `tx` (see `AccountHold`). With
    /// none left, the positions kept for the user's emptied groups go too.
    /// - Returns: how many held rows were taken (fewer than `limit`: none is left).
    /// - Throws: `DatabaseError`.
    static func restore(_ user: Int64, limit: Int, in tx: Transaction) throws -> Int {
        let c = tx.connection
        let held = try c.query(
            """
            SELECT recipient, seq, type, grp, detail FROM held_notifications WHERE actor = \(user)
            ORDER BY recipient, seq LIMIT \(limit)
            """
        ).map {
            Held(
                recipient: try $0.int64("recipient"), seq: try $0.int64("seq"), type: try $0.int64("type"),
                grp: try $0.optionalInt64("grp"), detail: try $0.optionalString("detail"))
        }
        guard !held.isEmpty else {
            try tx.query("DELETE FROM held_groups WHERE actor = \(user)")
            return 0
        }
        let batch = KeyTable.keys(held.map { ($0.recipient, $0.seq) })
        try NotificationWriter.byKey(c) {
            let from: SQL = """
                FROM held_notifications h JOIN (\(batch)) k ON h.recipient = k.c0 AND h.seq = k.c1
                    LEFT JOIN recipients f ON f.recipient = h.recipient
                """
            var restored = try c.integerPairs(
                """
                INSERT INTO notifications(\(BatchRemoval.columns))
                SELECT h.recipient, h.seq, h.type, h.actor, h.post, h.once, h.detail, h.created_at, h.grp \(from)
                WHERE h.seq <= COALESCE(f.merged_head, 0)
                ON CONFLICT DO NOTHING RETURNING recipient, seq
                """)
            let recent = try c.integerPairs(
                """
                INSERT INTO recent_notifications(\(BatchRemoval.columns))
                SELECT h.recipient, h.seq, h.type, h.actor, h.post, h.once, h.detail, h.created_at, CAST(NULL AS BIGINT) \(from)
                WHERE h.seq > COALESCE(f.merged_head, 0)
                ON CONFLICT DO NOTHING RETURNING recipient, seq
                """)
            if !recent.isEmpty {
                try tx.query(
                    """
                    UPDATE recent_notifications SET grp = (SELECT h.grp FROM held_notifications h
                        WHERE h.recipient = recent_notifications.recipient AND h.seq = recent_notifications.seq)
                    WHERE (recipient, seq) IN (SELECT c0, c1 FROM (\(KeyTable.keys(recent))) k)
                    """)
            }
            restored += recent
            try tx.query("DELETE FROM held_notifications WHERE (recipient, seq) IN (SELECT c0, c1 FROM (\(batch)) k)")
            guard !restored.isEmpty else { return }
            // Unread again where the read mark has not passed them: their tombstones go.
            var untombstoned: [Int64: Int64] = [:]
            for recipient in try tx.query(
                """
                DELETE FROM removed_unread WHERE (recipient, seq) IN (SELECT c0, c1 FROM (\(KeyTable.keys(restored))) k)
                RETURNING recipient
                """
            ) {
                untombstoned[try recipient.int64("recipient"), default: 0] -= 1
            }
            if !untombstoned.isEmpty {
                let changes = KeyTable.rows(untombstoned.sorted { $0.key < $1.key }.map { [$0.key, $0.value] }, columns: 2)
                try tx.query(
                    """
                    INSERT INTO recipients(recipient, removed_unread) SELECT c0, c1 FROM (\(changes)) k WHERE true
                    ON CONFLICT(recipient) DO UPDATE SET removed_unread = recipients.removed_unread + excluded.removed_unread
                    """)
            }
            // Each group gets its restored members back.
            let back = Set(restored.map { [$0.0, $0.1] })
            var groups: [[Int64]: (count: Int, newest: Int64, detail: String?)] = [:]
            for row in held where back.contains([row.recipient, row.seq]) {
                guard let grp = row.grp else { continue }
                var group = groups[[row.recipient, row.type, grp]] ?? (0, 0, nil)
                group.count += 1
                group.newest = max(group.newest, row.seq)
                if row.type == NotificationType.like.rawValue { group.detail = group.detail ?? row.detail }
                groups[[row.recipient, row.type, grp]] = group
            }
            for (key, group) in groups.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                try NotificationGroups.restore(
                    group.count, recipient: key[0], type: key[1], grp: key[2], newest: group.newest, detail: group.detail,
                    heldFor: user, in: tx)
            }
        }
        return held.count
    }
}
