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
    /// See `Graph.Notification.detail`.
    var detail: String?
    var post: Graph.Notification.PostRef?
    /// RFC 3339.
    var createdAt: String
}

/// Notifications (`notifications`, `recipients`): every statement on those tables.
protocol NotificationStore: Sendable {
    /// A page of the recipient's notifications, newest first, with the unread count.
    /// - Throws: 400 `invalid_cursor`.
    func list(recipientId: String, page: PageRequest) async throws -> Graph.ListNotifications.Reply

    /// Everything after `afterSeq`, oldest first, at most `limit` (1...1,000), and the head.
    func since(recipientId: String, afterSeq: Int64, limit: Int) async throws -> Graph.NotificationsSince.Reply

    /// Moves the read mark up to `upToSeq` (never back, never past the head). - Returns: the
    /// unread count afterwards.
    func markRead(recipientId: String, upToSeq: Int64) async throws -> Int
}

/// `NotificationStore` on SQLite. The `in tx` functions are for the event handlers and the
/// follow graph, which store notifications in their own transactions.
struct SQLiteNotificationStore: NotificationStore {
    let database: Database

    static let columns = "key, seq, type, detail, created_at, actor_id, post_id, thumbnail_url"

    /// Stores `n` unless the same (recipient, actor, type, object) already exists, gives it the
    /// recipient's next seq, and emits `notify.created`, in `tx`.
    /// - Returns: the stored notification, or nil for a duplicate or a self-notification.
    /// - Throws: `SQLiteError`.
    @discardableResult
    static func insert(_ n: NewNotification, in tx: Transaction) throws -> Graph.Notification? {
        guard n.recipientId != n.actorId else { return nil }
        let c = tx.connection
        let seq = (try c.scalar("SELECT head_seq FROM recipients WHERE recipient_id = ?", [n.recipientId]) ?? 0) + 1
        try c.query(
            """
            INSERT INTO notifications(recipient_id, seq, type, detail, created_at, actor_id, object_id, post_id, thumbnail_url)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(recipient_id, actor_id, type, object_id) DO NOTHING
            """,
            [n.recipientId, seq, n.type, n.detail, n.createdAt, n.actorId, n.objectId, n.post?.id, n.post?.thumbnailURL])
        guard c.changes == 1 else { return nil }
        let key = c.lastInsertRowID
        try c.query(
            """
            INSERT INTO recipients(recipient_id, head_seq) VALUES (?, ?)
            ON CONFLICT(recipient_id) DO UPDATE SET head_seq = excluded.head_seq
            """, [n.recipientId, seq])
        let followState: FollowState? =
            n.type == "follow" ? try SQLiteFollowStore.state(viewer: n.recipientId, toward: n.actorId, on: c) : nil
        let stored = Graph.Notification(
            id: String(key), seq: seq, type: n.type, detail: n.detail, createdAt: n.createdAt, read: false,
            actorId: n.actorId, post: n.post, followState: followState)
        try tx.emit(Graph.NotificationCreated(recipientId: n.recipientId, notification: stored))
        return stored
    }

    /// Deletes every notification about `postId`, in `tx`. - Returns: how many.
    static func deleteAbout(postId: String, in tx: Transaction) throws -> Int {
        try tx.query("DELETE FROM notifications WHERE post_id = ?", [postId])
        return tx.connection.changes
    }

    /// The recipient's head seq (0 when none) and read mark.
    private static func marks(_ recipientId: String, on c: SQLiteConnection) throws -> (head: Int64, read: Int64) {
        guard let row = try c.queryOne("SELECT head_seq, read_seq FROM recipients WHERE recipient_id = ?", [recipientId])
        else { return (0, 0) }
        return (try row.int64("head_seq"), try row.int64("read_seq"))
    }

    private static func unreadCount(_ recipientId: String, readSeq: Int64, on c: SQLiteConnection) throws -> Int {
        Int(
            try c.scalar("SELECT COUNT(*) FROM notifications WHERE recipient_id = ? AND seq > ?", [recipientId, readSeq])
                ?? 0)
    }

    /// Decodes rows selected with `columns`; follow notifications get the recipient's current
    /// follow state toward the actor (computed now, at read time).
    private static func decode(_ rows: [Row], recipientId: String, readSeq: Int64, on c: SQLiteConnection) throws
        -> [Graph.Notification]
    {
        try rows.map { r in
            let type = try r.string("type")
            let actor = try r.string("actor_id")
            let seq = try r.int64("seq")
            let post = try r.optionalString("post_id").map {
                Graph.Notification.PostRef(id: $0, thumbnailURL: try r.optionalString("thumbnail_url") ?? "")
            }
            return Graph.Notification(
                id: String(try r.int64("key")), seq: seq, type: type, detail: try r.optionalString("detail"),
                createdAt: try r.string("created_at"), read: seq <= readSeq, actorId: actor, post: post,
                followState: type == "follow" ? try SQLiteFollowStore.state(viewer: recipientId, toward: actor, on: c) : nil)
        }
    }

    func list(recipientId: String, page: PageRequest) async throws -> Graph.ListNotifications.Reply {
        let before = try PageCursor.decode(page.cursor, list: "notifications", owner: recipientId) ?? Int64.max
        let limit = page.clampedLimit
        return try await database.read { c in
            try c.snapshot {
                let marks = try Self.marks(recipientId, on: c)
                let rows = try c.query(
                    "SELECT \(Self.columns) FROM notifications WHERE recipient_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                    [recipientId, before, limit + 1])
                let items = try Self.decode(Array(rows.prefix(limit)), recipientId: recipientId, readSeq: marks.read, on: c)
                return .init(
                    items: items,
                    nextCursor: rows.count > limit
                        ? items.last.map { PageCursor.encode(list: "notifications", owner: recipientId, key: $0.seq) }
                        : nil,
                    unreadCount: try Self.unreadCount(recipientId, readSeq: marks.read, on: c))
            }
        }
    }

    func since(recipientId: String, afterSeq: Int64, limit: Int) async throws -> Graph.NotificationsSince.Reply {
        try await database.read { c in
            try c.snapshot {
                let marks = try Self.marks(recipientId, on: c)
                let rows = try c.query(
                    "SELECT \(Self.columns) FROM notifications WHERE recipient_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                    [recipientId, afterSeq, min(max(limit, 1), 1_000)])
                return .init(
                    items: try Self.decode(rows, recipientId: recipientId, readSeq: marks.read, on: c), headSeq: marks.head)
            }
        }
    }

    func markRead(recipientId: String, upToSeq: Int64) async throws -> Int {
        try await database.write { tx in
            try tx.query(
                "UPDATE recipients SET read_seq = MAX(read_seq, MIN(?, head_seq)) WHERE recipient_id = ?",
                [upToSeq, recipientId])
            let marks = try Self.marks(recipientId, on: tx.connection)
            return try Self.unreadCount(recipientId, readSeq: marks.read, on: tx.connection)
        }
    }
}
