import Storage

/// A queued push a sender claimed: what its `PushMessage` needs.
struct ClaimedPush: Sendable, Equatable {
    /// `push_queue.id`.
    var id: Int64
    /// `devices.key`.
    var device: Int64
    /// Lowercase hex.
    var token: String
    var recipient: Int64
    var seq: Int64
    var type: NotificationType
    var text: String
    var collapseID: String?
    /// Sends tried before this one.
    var attempts: Int64
    /// Unix ms: when it was queued.
    var createdAt: Int64
    /// The recipient's unread count (the badge), read in the claim's transaction.
    var badge: Int
    /// The notification's API id (`NotificationIds`).
    var notificationId: String
}

/// The push queue (`push_queue`, see `PushSchema`): rows written with the notifications they
/// announce, claimed by senders under a lease, and removed or rescheduled by their outcome.
/// Every function runs in the caller's transaction; the sender and the notification writer
/// call these, they write no SQL of their own.
enum PushQueueStore {
    /// The `round` of a push with seq `seq` for `recipient` (SQL over two columns or bound
    /// values): how far its seq is past the recipient's oldest queued push, 0 with none queued.
    /// One seek into `push_queue_by_recipient`.
    static func round(seq: SQL, recipient: SQL) -> SQL {
        "\(seq) - COALESCE((SELECT MIN(o.seq) FROM push_queue o WHERE o.recipient = \(recipient)), \(seq))"
    }

    /// The condition on devices alias `d` that keeps only those of `environments` (nil: every
    /// device), e.g. `d.environment IN (?1)` with `sandbox` bound (`PushQueue.environments`).
    static func environmentCondition(_ environments: Set<String>?) -> SQL {
        guard let environments else { return "TRUE" }
        return "d.environment IN (\(list: environments.sorted()))"
    }

    /// Queues one push per device of `recipient` unless they turned pushes of `type` off, in `tx`.
    /// - Parameters:
    ///   - now: Unix ms (the row is due at once).
    ///   - environments: the device environments pushes go to (`PushQueue.environments`; nil: all).
    /// - Returns: the rows queued. - Throws: the engine's error.
    @discardableResult
    static func enqueue(
        recipient: Int64, seq: Int64, type: NotificationType, text: String, collapseID: String?, now: Int64,
        environments: Set<String>? = nil, in tx: Transaction
    ) throws -> Int {
        try NotificationWriter.byKey(tx.connection) {
            try tx.query(
                """
                INSERT INTO push_queue(device, recipient, seq, type, text, collapse_id, available_at, created_at, round)
                SELECT d.key, \(recipient), \(seq), \(type.rawValue), \(text), CAST(\(collapseID) AS TEXT), \(now), \(now),
                    \(round(seq: "\(seq)", recipient: "\(recipient)")) FROM devices d
                WHERE d.user_key = \(recipient) AND \(environmentCondition(environments))
                    AND NOT EXISTS (SELECT 1 FROM push_preferences p
                    WHERE p.user_key = \(recipient) AND (p.muted & \(DeviceStore.muteBit(type))) <> 0)
                """)
            return tx.connection.changes
        }
    }

    /// Queues the pushes of one fan-out batch in one set-based statement: the `post`
    /// notifications about `post` of recipients in (`after`, `last`] (the batch the same
    /// transaction just wrote to `recent_notifications`), joined with their devices, less the
    /// recipients who turned `post` pushes off, in `tx`.
    ///
    /// A fan-out is one burst, so its rows take rounds 1, 2, 3, … in follower order (each batch
    /// again from 1, interleaving with what earlier batches left): a like queued during a
    /// 100,000-follower fan-out (round 0) goes in the next claim, not after the fan-out, and two
    /// fan-outs share the senders; alone, a fan-out drains as fast as the senders go.
    /// - Returns: the rows queued. - Throws: the engine's error.
    @discardableResult
    static func enqueueFanOut(
        post: Int64, after: Int64, last: Int64, text: String, now: Int64, environments: Set<String>? = nil,
        in tx: Transaction
    ) throws -> Int {
        try NotificationWriter.byKey(tx.connection) {
            try tx.query(
                """
                INSERT INTO push_queue(device, recipient, seq, type, text, collapse_id, available_at, created_at, round)
                SELECT d.key, n.recipient, n.seq, n.type, \(text), NULL, \(now), \(now),
                    row_number() OVER (ORDER BY n.recipient, d.key)
                FROM recent_notifications n JOIN devices d ON d.user_key = n.recipient
                WHERE n.post = \(post) AND n.type = \(literal: NotificationType.post.rawValue) AND n.recipient > \(after)
                    AND n.recipient <= \(last)
                    AND \(environmentCondition(environments)) AND NOT EXISTS (SELECT 1 FROM push_preferences p
                        WHERE p.user_key = n.recipient AND (p.muted & \(literal: DeviceStore.muteBit(.post))) <> 0)
                """)
            return tx.connection.changes
        }
    }

    /// Whether any device is registered at all (a fan-out skips its push statement when none is).
    static func anyDevices(on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM devices LIMIT 1")
    }

    /// The username of user `key` as the replica knows it (nil: not yet known).
    static func username(_ key: Int64, on c: DatabaseConnection) throws -> String? {
        try c.queryOne("SELECT username FROM identities WHERE key = \(key)")?.optionalString("username")
    }

    /// Claims up to `limit` due rows (available, and unclaimed or with an expired lease) for
    /// `claimer` until `leaseUntil`, in `(round, id)` order, in `tx`: every recipient's first
    /// waiting push (round 0) before anyone's second, and so on, oldest first within a round, so a
    /// burst for one recipient (1,000 likes, or many of a celebrity's) shares each batch with
    /// other recipients' new pushes instead of holding them back; with nothing else waiting,
    /// a batch takes the burst's rows as fast as they go. The claim reads the `(round, id)`
    /// index up to `limit` due rows, whatever the queue's length.
    ///
    /// On PostgreSQL the rows are picked `FOR UPDATE SKIP LOCKED` (a row another sender's open
    /// claim holds is skipped; one it claimed and committed fails the lease check under the
    /// lock); on SQLite the one writer runs the claim `UPDATE … RETURNING` alone. Two senders
    /// never claim the same row.
    /// - Parameters: `now`, `leaseUntil`: Unix ms.
    /// - Returns: the claimed rows with their device tokens, badges and notification ids.
    /// - Throws: the engine's error.
    static func claim(now: Int64, leaseUntil: Int64, claimer: String, limit: Int, in tx: Transaction) throws
        -> [ClaimedPush]
    {
        let c = tx.connection
        // By index whatever the statistics say (`NotificationWriter.byKey`): the queue swings
        // between empty and a fan-out's 100,000 rows, and so does `recent_notifications`.
        return try NotificationWriter.byKey(c) {
            try claimByKey(now: now, leaseUntil: leaseUntil, claimer: claimer, limit: limit, on: c)
        }
    }

    private static func claimByKey(now: Int64, leaseUntil: Int64, claimer: String, limit: Int, on c: DatabaseConnection) throws
        -> [ClaimedPush]
    {
        let ids = try c.query(
            """
            WITH picked AS (
                SELECT id FROM push_queue WHERE available_at <= \(now) AND claimed_until <= \(now)
                ORDER BY round, id LIMIT \(limit)\(SQL.forUpdateSkipLocked))
            UPDATE push_queue SET claimed_until = \(leaseUntil), claimed_by = \(claimer)
            WHERE id IN (SELECT id FROM picked) RETURNING id
            """
        ).map { try $0.int64("id") }
        guard !ids.isEmpty else { return [] }
        // The rows with their tokens and the three numbers of each recipient's badge
        // (`SQLNotificationStore.unreadCount`), in one statement.
        let rows = try c.query(
            """
            SELECT q.id, q.device, d.token, q.recipient, q.seq, q.type, q.text, q.collapse_id, q.attempts, q.created_at,
                \(NotificationWriter.head("q.recipient")) AS head, COALESCE(f.read_seq, 0) AS read_seq,
                COALESCE(f.removed_unread, 0) AS removed_unread
            FROM push_queue q JOIN devices d ON d.key = q.device LEFT JOIN recipients f ON f.recipient = q.recipient
            WHERE q.id IN (\(list: ids)) ORDER BY q.id
            """)
        let notificationIds = try NotificationIds.load(on: c)
        return try rows.map { r in
            let recipient = try r.int64("recipient")
            let seq = try r.int64("seq")
            return ClaimedPush(
                id: try r.int64("id"), device: try r.int64("device"), token: try r.string("token"), recipient: recipient,
                seq: seq, type: NotificationType(rawValue: try r.int64("type")) ?? .post, text: try r.string("text"),
                collapseID: try r.optionalString("collapse_id"), attempts: try r.int64("attempts"),
                createdAt: try r.int64("created_at"),
                badge: SQLNotificationStore.unread(
                    head: try r.int64("head"), readSeq: try r.int64("read_seq"), removed: try r.int64("removed_unread")),
                notificationId: notificationIds.id(recipient: recipient, seq: seq))
        }
    }

    /// Removes rows that were sent or dropped, in one statement. - Throws: the engine's error.
    static func remove(_ ids: [Int64], in tx: Transaction) throws {
        guard !ids.isEmpty else { return }
        try tx.query("DELETE FROM push_queue WHERE id IN (\(list: ids))")
    }

    /// Releases `claimer`'s claim of row `id` and makes it due again at `availableAt` (Unix ms),
    /// one attempt more. A row whose lease expired and that another sender claimed since is
    /// left to that sender. - Throws: the engine's error.
    static func reschedule(_ id: Int64, claimer: String, availableAt: Int64, in tx: Transaction) throws {
        try tx.query(
            """
            UPDATE push_queue SET available_at = \(availableAt), claimed_until = 0, claimed_by = NULL, attempts = attempts + 1
            WHERE id = \(id) AND claimed_by = \(claimer)
            """)
    }

    /// Deletes device `device` and its queued rows after APNs said its token is dead, unless it
    /// was registered (again) after `unregisteredAt` (Unix ms, 410's timestamp), in `tx`.
    /// - Returns: whether it was deleted. - Throws: the engine's error.
    static func removeDevice(_ device: Int64, unregisteredAt: Int64?, in tx: Transaction) throws -> Bool {
        if let unregisteredAt {
            try tx.query("DELETE FROM devices WHERE key = \(device) AND created_at <= \(unregisteredAt)")
        } else {
            try tx.query("DELETE FROM devices WHERE key = \(device)")
        }
        guard tx.connection.changes > 0 else { return false }
        try tx.query("DELETE FROM push_queue WHERE device = \(device)")
        return true
    }
}
