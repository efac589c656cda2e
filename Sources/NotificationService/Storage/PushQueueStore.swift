import Shared

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
    /// Queues one push per device of `recipient` unless they turned pushes of `type` off, in `tx`.
    /// - Parameter now: Unix ms (the row is due at once).
    /// - Returns: the rows queued. - Throws: the engine's error.
    @discardableResult
    static func enqueue(
        recipient: Int64, seq: Int64, type: NotificationType, text: String, collapseID: String?, now: Int64,
        in tx: Transaction
    ) throws -> Int {
        try tx.query(
            """
            INSERT INTO push_queue(device, recipient, seq, type, text, collapse_id, available_at, created_at)
            SELECT d.key, ?1, ?2, ?3, ?4, CAST(?5 AS TEXT), ?6, ?6 FROM devices d
            WHERE d.user_key = ?1 AND NOT EXISTS (SELECT 1 FROM push_preferences p
                WHERE p.user_key = ?1 AND (p.muted & ?7) <> 0)
            """, [recipient, seq, type.rawValue, text, collapseID, now, DeviceStore.muteBit(type)])
        return tx.connection.changes
    }

    /// Queues the pushes of one fan-out batch in one set-based statement: the `post`
    /// notifications about `post` of recipients in (`after`, `last`] (the batch the same
    /// transaction just wrote to `recent_notifications`), joined with their devices, less the
    /// recipients who turned `post` pushes off, in `tx`.
    /// - Returns: the rows queued. - Throws: the engine's error.
    @discardableResult
    static func enqueueFanOut(post: Int64, after: Int64, last: Int64, text: String, now: Int64, in tx: Transaction) throws
        -> Int
    {
        try tx.query(
            """
            INSERT INTO push_queue(device, recipient, seq, type, text, collapse_id, available_at, created_at)
            SELECT d.key, n.recipient, n.seq, n.type, ?4, NULL, ?5, ?5
            FROM recent_notifications n JOIN devices d ON d.user_key = n.recipient
            WHERE n.post = ?1 AND n.type = \(NotificationType.post.rawValue) AND n.recipient > ?2 AND n.recipient <= ?3
                AND NOT EXISTS (SELECT 1 FROM push_preferences p
                    WHERE p.user_key = n.recipient AND (p.muted & \(DeviceStore.muteBit(.post))) <> 0)
            """, [post, after, last, text, now])
        return tx.connection.changes
    }

    /// Whether any device is registered at all (a fan-out skips its push statement when none is).
    static func anyDevices(on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM devices LIMIT 1")
    }

    /// The username of user `key` as the replica knows it (nil: not yet known).
    static func username(_ key: Int64, on c: DatabaseConnection) throws -> String? {
        try c.queryOne("SELECT username FROM identities WHERE key = ?", [key])?.optionalString("username")
    }

    /// Claims up to `limit` due rows (available, unclaimed or with an expired lease) for
    /// `claimer` until `leaseUntil`, at most `perRecipient` per recipient (the oldest of each:
    /// `row_number() OVER (PARTITION BY recipient ORDER BY id)`), oldest first, in `tx`.
    ///
    /// On PostgreSQL the chosen rows are locked `FOR UPDATE SKIP LOCKED` and their lease checked
    /// again under the lock, so two senders never claim the same row: a row another sender's
    /// open transaction claims is skipped, and one it claimed and committed fails the check. On
    /// SQLite the one writer runs the claim `UPDATE … RETURNING` alone.
    /// - Parameters: `now`, `leaseUntil`: Unix ms.
    /// - Returns: the claimed rows with their device tokens, badges and notification ids.
    /// - Throws: the engine's error.
    static func claim(
        now: Int64, leaseUntil: Int64, claimer: String, limit: Int, perRecipient: Int, in tx: Transaction
    ) throws -> [ClaimedPush] {
        let c = tx.connection
        let lock =
            c.engine == .postgres
            ? """
            , locked AS (SELECT q.id FROM push_queue q JOIN picked ON picked.id = q.id
                WHERE q.claimed_until <= ?1 AND q.available_at <= ?1 FOR UPDATE OF q SKIP LOCKED)
            """ : ""
        let ids = try c.query(
            """
            WITH due AS (
                SELECT id, row_number() OVER (PARTITION BY recipient ORDER BY id) AS r
                FROM push_queue WHERE available_at <= ?1 AND claimed_until <= ?1),
            picked AS (SELECT id FROM due WHERE r <= ?2 ORDER BY id LIMIT ?3)\(lock)
            UPDATE push_queue SET claimed_until = ?4, claimed_by = ?5
            WHERE id IN (SELECT id FROM \(c.engine == .postgres ? "locked" : "picked")) RETURNING id
            """, [now, perRecipient, limit, leaseUntil, claimer]
        ).map { try $0.int64("id") }
        guard !ids.isEmpty else { return [] }
        let rows = try c.query(
            """
            SELECT q.id, q.device, d.token, q.recipient, q.seq, q.type, q.text, q.collapse_id, q.attempts, q.created_at
            FROM push_queue q JOIN devices d ON d.key = q.device
            WHERE q.id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ", "))) ORDER BY q.id
            """, ids)
        let notificationIds = try NotificationIds.load(on: c)
        var badges: [Int64: Int] = [:]
        return try rows.map { r in
            let recipient = try r.int64("recipient")
            let seq = try r.int64("seq")
            let badge = try badges[recipient] ?? SQLNotificationStore.unreadCount(recipient, on: c)
            badges[recipient] = badge
            return ClaimedPush(
                id: try r.int64("id"), device: try r.int64("device"), token: try r.string("token"), recipient: recipient,
                seq: seq, type: NotificationType(rawValue: try r.int64("type")) ?? .post, text: try r.string("text"),
                collapseID: try r.optionalString("collapse_id"), attempts: try r.int64("attempts"),
                createdAt: try r.int64("created_at"), badge: badge,
                notificationId: notificationIds.id(recipient: recipient, seq: seq))
        }
    }

    /// Removes a row that was sent or dropped. - Throws: the engine's error.
    static func remove(_ id: Int64, in tx: Transaction) throws {
        try tx.query("DELETE FROM push_queue WHERE id = ?", [id])
    }

    /// Releases `claimer`'s claim of row `id` and makes it due again at `availableAt` (Unix ms),
    /// one attempt more. A row whose lease expired and that another sender claimed since is
    /// left to that sender. - Throws: the engine's error.
    static func reschedule(_ id: Int64, claimer: String, availableAt: Int64, in tx: Transaction) throws {
        try tx.query(
            """
            UPDATE push_queue SET available_at = ?, claimed_until = 0, claimed_by = NULL, attempts = attempts + 1
            WHERE id = ? AND claimed_by = ?
            """, [availableAt, id, claimer])
    }

    /// Deletes device `device` and its queued rows after APNs said its token is dead, unless it
    /// was registered (again) after `unregisteredAt` (Unix ms, 410's timestamp), in `tx`.
    /// - Returns: whether it was deleted. - Throws: the engine's error.
    static func removeDevice(_ device: Int64, unregisteredAt: Int64?, in tx: Transaction) throws -> Bool {
        if let unregisteredAt {
            try tx.query("DELETE FROM devices WHERE key = ? AND created_at <= ?", [device, unregisteredAt])
        } else {
            try tx.query("DELETE FROM devices WHERE key = ?", [device])
        }
        guard tx.connection.changes > 0 else { return false }
        try tx.query("DELETE FROM push_queue WHERE device = ?", [device])
        return true
    }
}
