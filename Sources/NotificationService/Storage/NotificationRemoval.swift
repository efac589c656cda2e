import Storage

/// A stored notification row about to be removed: its key and what its group and badge need.
struct RemovedRow: Sendable, Equatable {
    var recipient: Int64
    var seq: Int64
    var type: Int64
    /// Its group within the type (nil: never grouped).
    var grp: Int64?
    var actor: Int64
    /// Its dedup key (see `NotificationSchema`), nil for none.
    var once: Int64?
    /// Whether it is a row a suspension holds (`held_notifications`, see `AccountHold`): out of
    /// the lists, groups and badge already, so it only goes.
    var held: Bool

    init(recipient: Int64, seq: Int64, type: Int64, grp: Int64?, actor: Int64, once: Int64?, held: Bool = false) {
        self.recipient = recipient
        self.seq = seq
        self.type = type
        self.grp = grp
        self.actor = actor
        self.once = once
        self.held = held
    }

    /// A row selected with `recipient, seq, type, grp, actor, once` and optionally `held` (0/1).
    /// - Throws: `RowError`.
    init(_ r: Row) throws {
        self.init(
            recipient: try r.int64("recipient"), seq: try r.int64("seq"), type: try r.int64("type"),
            grp: try r.optionalInt64("grp"), actor: try r.int64("actor"), once: try r.optionalInt64("once"),
            held: r.columns.names.contains("held") ? try r.bool("held") : false)
    }
}

/// "These notification rows go": the one path every removal takes (an unlike, an unfollow, a
/// deleted post, retention), so the flat list, the groups and the badge agree afterwards. (The
/// hold and the erasure of an account remove many rows at once through `BatchRemoval`, with the
/// same corrections.)
enum NotificationRemoval {
    /// The rows of both notification tables matching `condition` (SQL over the row's columns),
    /// and the held ones (`AccountHold`), ready for `remove`, in one statement.
    /// - Throws: `DatabaseError`.
    static func rows(where condition: SQL, on c: DatabaseConnection) throws -> [RemovedRow] {
        let tables: [(SQL, SQL)] = [("recent_notifications", "0"), ("notifications", "0"), ("held_notifications", "1")]
        return try c.query(
            tables.map { table, held in
                "SELECT recipient, seq, type, grp, actor, once, \(held) AS held FROM \(table) WHERE \(condition)"
            }.joined(separator: " UNION ALL ")
        ).map(RemovedRow.init)
    }

    /// Deletes `rows` from both notification tables, in `tx`, and keeps what depends on them:
    /// - each recipient's `head_floor` rises to the largest seq removed (a seq is never handed
    ///   out twice);
    /// - a row above its recipient's read mark leaves a tombstone in `removed_unread` and adds
    ///   one to `recipients.removed_unread` (the badge is head − read − removed);
    /// - each group loses its removed members (`NotificationGroups.remove`): deleted at 0,
    ///   otherwise its newest member and actors read again;
    /// - with `suppressRepeat` (an unlike, an unfollow, a deleted comment), each row's dedup key
    ///   is kept in `push_suppressed` unless no push of it can have gone out
    ///   (`pushCannotHaveGoneOut`): doing the action again notifies again (a new seq, API.md's
    ///   undo/redo rule) but pushes no second time for the same actor and object.
    /// - Throws: the engine's error.
    static func remove(_ rows: [RemovedRow], suppressRepeat: Bool = false, in tx: Transaction) throws {
        if rows.isEmpty { return }
        let c = tx.connection
        var removed: [Int64: [Int64]] = [:]  // recipient → seqs deleted
        var groups: [[Int64]: Int] = [:]
        for row in rows {
            if row.held {
                // Its corrections were made when it was held.
                try tx.query("DELETE FROM held_notifications WHERE recipient = \(row.recipient) AND seq = \(row.seq)")
                continue
            }
            try tx.query("DELETE FROM recent_notifications WHERE recipient = \(row.recipient) AND seq = \(row.seq)")
            var gone = c.changes
            try tx.query("DELETE FROM notifications WHERE recipient = \(row.recipient) AND seq = \(row.seq)")
            gone += c.changes
            guard gone > 0 else { continue }  // listed twice, or gone already
            // A push not sent yet announces nothing any more.
            let unsent = suppressRepeat && row.once != nil ? try Self.pushCannotHaveGoneOut(row, in: tx) : false
            try tx.query("DELETE FROM push_queue WHERE recipient = \(row.recipient) AND seq = \(row.seq)")
            removed[row.recipient, default: []].append(row.seq)
            if suppressRepeat, !unsent, let once = row.once {
                try tx.query(
                    """
                    INSERT INTO push_suppressed(recipient, actor, type, once)
                        VALUES (\(row.recipient), \(row.actor), \(row.type), \(once))
                    ON CONFLICT DO NOTHING
                    """)
            }
            if let grp = row.grp { groups[[row.recipient, row.type, grp], default: 0] += 1 }
        }
        for (recipient, seqs) in removed.sorted(by: { $0.key < $1.key }) {
            try tx.query(
                """
                INSERT INTO recipients(recipient, head_floor) VALUES (\(recipient), \(seqs.max() ?? 0))
                ON CONFLICT(recipient) DO UPDATE SET head_floor = \(SQL.greatest)(recipients.head_floor, excluded.head_floor)
                """)
            let read = try c.scalar("SELECT read_seq FROM recipients WHERE recipient = \(recipient)") ?? 0
            var tombstones = 0
            for seq in seqs where seq > read {
                try tx.query(
                    "INSERT INTO removed_unread(recipient, seq) VALUES (\(recipient), \(seq)) ON CONFLICT DO NOTHING")
                tombstones += c.changes
            }
            if tombstones > 0 {
                try tx.query(
                    "UPDATE recipients SET removed_unread = removed_unread + \(tombstones) WHERE recipient = \(recipient)")
            }
        }
        for (key, count) in groups.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            try NotificationGroups.remove(count, recipient: key[0], type: key[1], grp: key[2], in: tx)
        }
    }

    /// Whether every device of `row`'s recipient still had the row's push waiting in the queue,
    /// never claimed by a sender nor tried (so none went out, and the redo may push once):
    /// as many such queued pushes as the recipient has devices, at least one. Anything else
    /// (a push sent, one in a sender's hands, a device added since, push off) counts as
    /// possibly sent, and the redo is not pushed. Read before the queue's rows are deleted.
    /// - Throws: the engine's error.
    static func pushCannotHaveGoneOut(_ row: RemovedRow, in tx: Transaction) throws -> Bool {
        let c = tx.connection
        guard
            let counts = try c.queryOne(
                """
                SELECT (SELECT COUNT(*) FROM push_queue WHERE recipient = \(row.recipient) AND seq = \(row.seq)
                    AND claimed_by IS NULL
                    AND attempts = 0) AS waiting,
                    (SELECT COUNT(*) FROM push_queue WHERE recipient = \(row.recipient) AND seq = \(row.seq)) AS queued,
                    (SELECT COUNT(*) FROM devices WHERE user_key = \(row.recipient)) AS devices
                """)
        else { return false }
        let waiting = try counts.int64("waiting")
        let queued = try counts.int64("queued")
        let devices = try counts.int64("devices")
        return waiting > 0 && waiting == queued && waiting == devices
    }
}
