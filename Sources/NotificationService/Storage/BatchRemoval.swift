import Storage

/// A list of integer tuples bound as one JSON text parameter and read as a table
/// (`c0`, `c1`, …): SQLite's `json_each`, PostgreSQL's `jsonb_array_elements`. A batch of keys
/// then costs one statement whatever its size, where a statement per key would cost a round trip
/// each on PostgreSQL.
enum KeyTable {
    /// `SELECT c0, …, c(n-1)` over `rows` (each of `columns` integers), for use as a subquery:
    /// `FROM (\(KeyTable.rows(keys, columns: 2))) k`.
    static func rows(_ rows: [[Int64]], columns: Int) -> SQL {
        var json = "["
        json.reserveCapacity(rows.count * 8 * columns)
        for (i, row) in rows.enumerated() {
            if i > 0 { json += "," }
            json += "[" + row.map(String.init).joined(separator: ",") + "]"
        }
        json += "]"
        let sqlite = (0..<columns).map { "json_extract(value, '$[\($0)]') AS c\($0)" }.joined(separator: ", ")
        let postgres = (0..<columns).map { "(v->>\($0))::bigint AS c\($0)" }.joined(separator: ", ")
        return SQL.dialect(
            sqlite: "SELECT \(sqlite) FROM json_each(", postgres: "SELECT \(postgres) FROM jsonb_array_elements(")
            + "\(json)" + SQL.dialect(sqlite: ")", postgres: "::jsonb) AS e(v)")
    }

    /// (recipient, seq) keys as a table `c0`, `c1`, in key order.
    static func keys(_ keys: [(Int64, Int64)]) -> SQL {
        rows(keys.sorted { $0 < $1 }.map { [$0.0, $0.1] }, columns: 2)
    }
}

/// `NotificationRemoval` for many rows at once: the same corrections (the recipients'
/// `head_floor`, the unread tombstones and counters, the queued pushes, the groups), each one
/// set-based statement for the whole batch except the groups (a few statements per group the
/// batch touches). The hold and the erasure of an account (`AccountHold`, `AccountErasure`)
/// remove up to `NOTIFICATION_ERASURE_BATCH` rows per transaction this way.
enum BatchRemoval {
    /// The columns of a notification row, in the tables' order.
    static let columns: SQL = "recipient, seq, type, actor, post, once, detail, created_at, grp"

    /// Removes the visible rows with `keys` (recipient, seq) from both notification tables, in
    /// `tx`, with the corrections of `NotificationRemoval.remove`. With `holdFor`, the rows are
    /// first copied into `held_notifications` and a group they empty leaves its position in
    /// `held_groups` (`AccountHold.restore` puts both back). Keys of rows that are gone already
    /// are skipped.
    /// - Returns: how many rows were removed. - Throws: `DatabaseError`.
    @discardableResult
    static func remove(_ keys: [(Int64, Int64)], holdFor actor: Int64?, in tx: Transaction) throws -> Int {
        if keys.isEmpty { return 0 }
        let c = tx.connection
        let batch = KeyTable.keys(keys)
        return try NotificationWriter.byKey(c) {
            var gone: [RemovedRow] = []
            for table: SQL in ["recent_notifications", "notifications"] {
                let match: SQL = "(recipient, seq) IN (SELECT c0, c1 FROM (\(batch)) k)"
                if actor != nil {
                    try tx.query(
                        """
                        INSERT INTO held_notifications(\(columns)) SELECT \(columns) FROM \(table) WHERE \(match)
                        ON CONFLICT DO NOTHING
                        """)
                }
                gone += try tx.query(
                    "DELETE FROM \(table) WHERE \(match) RETURNING recipient, seq, type, grp, actor, once"
                ).map(RemovedRow.init)
            }
            try corrections(gone, holdFor: actor, in: tx)
            return gone.count
        }
    }

    /// The corrections of removed rows `gone` (deleted already), in `tx`: their queued pushes go,
    /// each recipient's `head_floor` rises to its largest seq removed, a row above its recipient's
    /// read mark leaves a tombstone and one more `removed_unread`, each group loses its members
    /// (`NotificationGroups.remove`, which keeps an emptied group's position for `holdFor`).
    /// - Throws: `DatabaseError`.
    static func corrections(_ gone: [RemovedRow], holdFor actor: Int64?, in tx: Transaction) throws {
        if gone.isEmpty { return }
        let removed = KeyTable.keys(gone.map { ($0.recipient, $0.seq) })
        try tx.query("DELETE FROM push_queue WHERE (recipient, seq) IN (SELECT c0, c1 FROM (\(removed)) k)")
        let tombstoned = try tx.query(
            """
            INSERT INTO removed_unread(recipient, seq)
            SELECT k.c0, k.c1 FROM (\(removed)) k LEFT JOIN recipients f ON f.recipient = k.c0
            WHERE k.c1 > COALESCE(f.read_seq, 0)
            ON CONFLICT DO NOTHING RETURNING recipient
            """
        ).map { try $0.int64("recipient") }
        var perRecipient: [Int64: (head: Int64, tombstones: Int64)] = [:]
        for row in gone {
            var entry = perRecipient[row.recipient] ?? (0, 0)
            entry.head = max(entry.head, row.seq)
            perRecipient[row.recipient] = entry
        }
        for recipient in tombstoned { perRecipient[recipient, default: (0, 0)].tombstones += 1 }
        let recipients = KeyTable.rows(
            perRecipient.sorted { $0.key < $1.key }.map { [$0.key, $0.value.head, $0.value.tombstones] }, columns: 3)
        try tx.query(
            """
            INSERT INTO recipients(recipient, head_floor, removed_unread) SELECT c0, c1, c2 FROM (\(recipients)) k WHERE true
            ON CONFLICT(recipient) DO UPDATE SET head_floor = \(SQL.greatest)(recipients.head_floor, excluded.head_floor),
                removed_unread = recipients.removed_unread + excluded.removed_unread
            """)
        var groups: [[Int64]: Int] = [:]
        for row in gone { if let grp = row.grp { groups[[row.recipient, row.type, grp], default: 0] += 1 } }
        for (key, count) in groups.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            try NotificationGroups.remove(count, recipient: key[0], type: key[1], grp: key[2], holdFor: actor, in: tx)
        }
    }
}
