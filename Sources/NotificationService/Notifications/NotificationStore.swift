import Shared

/// A notification to store: who gets it, who caused it, and what about.
struct NewNotification: Sendable {
    var recipientId: String
    var actorId: String
    /// `like`, `follow`, `comment`, `tag` or `post`.
    var type: String
    /// The object of the action, part of the dedup key: the followee for `follow`, the post for
    /// `like`/`tag`/`post`, the comment for `comment`.
    var objectId: String
    var text: String
    var post: Graph.Notification.PostRef?
    /// RFC 3339.
    var createdAt: String
}

/// Storage of notifications (`notifications` and `recipients` tables). Every function runs on a
/// connection the caller holds (a write transaction or a read connection); statements are
/// cached by SQL text, so loops reuse prepared statements.
enum NotificationStore {
    static let columns = "key, seq, type, text, created_at, actor_id, post_id, thumbnail_url"

    /// Stores `n` unless the same (recipient, actor, type, object) already exists, gives it the
    /// recipient's next seq, and emits `notify.created` in the same transaction.
    /// - Returns: the stored notification, or nil for a duplicate or a self-notification.
    /// - Throws: `SQLiteError`.
    @discardableResult
    static func insert(_ n: NewNotification, in tx: Transaction) throws -> Graph.Notification? {
        guard n.recipientId != n.actorId else { return nil }
        let head =
            try tx.connection.queryOne(
                "SELECT head_seq FROM recipients WHERE recipient_id = ?", [n.recipientId])?.int(0) ?? 0
        let seq = head + 1
        try tx.query(
            """
            INSERT INTO notifications(recipient_id, seq, type, text, created_at, actor_id, object_id, post_id, thumbnail_url)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(recipient_id, actor_id, type, object_id) DO NOTHING
            """,
            [
                n.recipientId, seq, n.type, n.text, n.createdAt, n.actorId, n.objectId, n.post?.id,
                n.post?.thumbnailURL,
            ])
        guard tx.connection.changes == 1 else { return nil }
        let key = tx.connection.lastInsertRowID
        try tx.query(
            """
            INSERT INTO recipients(recipient_id, head_seq) VALUES (?, ?)
            ON CONFLICT(recipient_id) DO UPDATE SET head_seq = excluded.head_seq
            """, [n.recipientId, seq])
        let followState: FollowState? =
            n.type == "follow"
            ? try FollowGraph.state(viewer: n.recipientId, toward: n.actorId, on: tx.connection) : nil
        let stored = Graph.Notification(
            id: String(key), seq: seq, type: n.type, text: n.text, createdAt: n.createdAt, read: false,
            actorId: n.actorId,
            post: n.post, followState: followState)
        try tx.emit(Graph.NotificationCreated(recipientId: n.recipientId, notification: stored))
        return stored
    }

    /// Deletes every notification about `postId`. - Returns: how many.
    static func deleteAbout(postId: String, in tx: Transaction) throws -> Int {
        try tx.query("DELETE FROM notifications WHERE post_id = ?", [postId])
        return tx.connection.changes
    }

    /// The recipient's head seq (0 when none) and read mark.
    static func marks(_ recipientId: String, on c: SQLiteConnection) throws -> (
        head: Int64, read: Int64
    ) {
        guard
            let row = try c.queryOne(
                "SELECT head_seq, read_seq FROM recipients WHERE recipient_id = ?", [recipientId])
        else {
            return (0, 0)
        }
        return (row.int(0), row.int(1))
    }

    /// Notifications with `seq` above the read mark.
    static func unreadCount(_ recipientId: String, readSeq: Int64, on c: SQLiteConnection) throws
        -> Int
    {
        Int(
            try c.queryOne(
                "SELECT COUNT(*) FROM notifications WHERE recipient_id = ? AND seq > ?",
                [recipientId, readSeq])?.int(0) ?? 0)
    }

    /// Decodes rows selected with `columns`; follow notifications get the recipient's current
    /// follow state toward the actor (computed now, at read time).
    static func decode(_ rows: [Row], recipientId: String, readSeq: Int64, on c: SQLiteConnection)
        throws -> [Graph.Notification]
    {
        try rows.map { r in
            let type = r.string(2)
            let actor = r.string(5)
            let post = r.optionalString(6).map {
                Graph.Notification.PostRef(id: $0, thumbnailURL: r.optionalString(7) ?? "")
            }
            return Graph.Notification(
                id: String(r.int(0)), seq: r.int(1), type: type, text: r.string(3), createdAt: r.string(4),
                read: r.int(1) <= readSeq, actorId: actor, post: post,
                followState: type == "follow"
                    ? try FollowGraph.state(viewer: recipientId, toward: actor, on: c) : nil)
        }
    }

    /// A page of the recipient's notifications, newest first (cursor: the last item's seq).
    /// - Throws: `ServiceError` 400 `invalid_cursor`, `SQLiteError`.
    static func list(_ recipientId: String, page: PageRequest, on c: SQLiteConnection) throws
        -> Graph.ListNotifications.Reply
    {
        let before = try Cursor.decode(page.cursor)
        let limit = Cursor.clampLimit(page.limit)
        let marks = try marks(recipientId, on: c)
        let rows = try c.query(
            "SELECT \(columns) FROM notifications WHERE recipient_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
            [recipientId, before, limit + 1])
        let items = try decode(
            Array(rows.prefix(limit)), recipientId: recipientId, readSeq: marks.read, on: c)
        let next = rows.count > limit ? items.last.map { Cursor.encode($0.seq) } : nil
        return .init(
            items: items, nextCursor: next,
            unreadCount: try unreadCount(recipientId, readSeq: marks.read, on: c))
    }

    /// Everything after `afterSeq`, oldest first, at most `limit` (1...1000).
    static func since(_ recipientId: String, afterSeq: Int64, limit: Int, on c: SQLiteConnection)
        throws
        -> Graph.NotificationsSince.Reply
    {
        let marks = try marks(recipientId, on: c)
        let rows = try c.query(
            "SELECT \(columns) FROM notifications WHERE recipient_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            [recipientId, afterSeq, min(max(limit, 1), 1_000)])
        return .init(
            items: try decode(rows, recipientId: recipientId, readSeq: marks.read, on: c),
            headSeq: marks.head)
    }

    /// Moves the read mark up to `upToSeq` (never back, never past the head).
    /// - Returns: the unread count afterwards.
    static func markRead(_ recipientId: String, upToSeq: Int64, in tx: Transaction) throws -> Int {
        try tx.query(
            "UPDATE recipients SET read_seq = MAX(read_seq, MIN(?, head_seq)) WHERE recipient_id = ?",
            [upToSeq, recipientId])
        let marks = try marks(recipientId, on: tx.connection)
        return try unreadCount(recipientId, readSeq: marks.read, on: tx.connection)
    }
}
