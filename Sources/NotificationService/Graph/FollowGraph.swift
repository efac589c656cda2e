import Shared

/// The follow graph (`follows`, `follow_counts`). Edge changes and their counters happen in one
/// write transaction, and only on a real change, so counts always equal the number of edges.
enum FollowGraph {
    /// The viewer's relation to `user`: `self`, `following` or `not_following`.
    static func state(viewer: String, toward user: String, on c: SQLiteConnection) throws
        -> FollowState
    {
        if viewer == user { return .self }
        let row = try c.queryOne(
            "SELECT 1 FROM follows WHERE follower_id = ? AND followee_id = ?", [viewer, user])
        return row == nil ? .notFollowing : .following
    }

    /// Creates the edge `follower → followee` (or changes its `notifyPosts` when given), emits
    /// `graph.follow.changed` on a real change, and stores the followee's `follow` notification
    /// (deduplicated: following again after an unfollow makes none).
    static func follow(
        follower: UserRef, followee: UserRef, notifyPosts: Bool?, now: String, in tx: Transaction
    ) throws -> Graph.Follow.Reply {
        if let row = try tx.connection.queryOne(
            "SELECT notify_posts FROM follows WHERE follower_id = ? AND followee_id = ?",
            [follower.id, followee.id])
        {
            let current = row.bool(0)
            guard let wanted = notifyPosts, wanted != current else {
                return .init(followState: .following, notifyPosts: current)
            }
            try tx.query(
                "UPDATE follows SET notify_posts = ? WHERE follower_id = ? AND followee_id = ?",
                [wanted, follower.id, followee.id])
            try tx.emit(
                Graph.FollowChanged(
                    followerId: follower.id, followeeId: followee.id, following: true, notifyPosts: wanted))
            return .init(followState: .following, notifyPosts: wanted)
        }
        let notify = notifyPosts ?? false
        try tx.query(
            "INSERT INTO follows(follower_id, followee_id, notify_posts, created_at) VALUES (?, ?, ?, ?)",
            [follower.id, followee.id, notify, now])
        try adjust(follower: follower.id, followee: followee.id, by: 1, in: tx)
        try tx.emit(
            Graph.FollowChanged(
                followerId: follower.id, followeeId: followee.id, following: true, notifyPosts: notify))
        try NotificationStore.insert(
            NewNotification(
                recipientId: followee.id, actorId: follower.id, type: "follow", objectId: followee.id,
                text: "\(follower.username) started following you.", post: nil, createdAt: now), in: tx)
        return .init(followState: .following, notifyPosts: notify)
    }

    /// Removes the edge if present (emitting `graph.follow.changed`); idempotent.
    static func unfollow(followerId: String, followeeId: String, in tx: Transaction) throws {
        let rows = try tx.query(
            "DELETE FROM follows WHERE follower_id = ? AND followee_id = ? RETURNING notify_posts",
            [followerId, followeeId])
        guard let row = rows.first else { return }
        try adjust(follower: followerId, followee: followeeId, by: -1, in: tx)
        try tx.emit(
            Graph.FollowChanged(
                followerId: followerId, followeeId: followeeId, following: false, notifyPosts: row.bool(0)))
    }

    /// Moves both counters by `delta` (±1), never below zero.
    private static func adjust(follower: String, followee: String, by delta: Int, in tx: Transaction)
        throws
    {
        try tx.query(
            """
            INSERT INTO follow_counts(user_id, followers, following) VALUES (?, MAX(?, 0), 0)
            ON CONFLICT(user_id) DO UPDATE SET followers = MAX(followers + ?, 0)
            """, [followee, delta, delta])
        try tx.query(
            """
            INSERT INTO follow_counts(user_id, followers, following) VALUES (?, 0, MAX(?, 0))
            ON CONFLICT(user_id) DO UPDATE SET following = MAX(following + ?, 0)
            """, [follower, delta, delta])
    }

    /// Follower and following counts of `userId` (0, 0 when it has no edges).
    static func counts(_ userId: String, on c: SQLiteConnection) throws -> (
        followers: Int, following: Int
    ) {
        guard
            let row = try c.queryOne(
                "SELECT followers, following FROM follow_counts WHERE user_id = ?", [userId])
        else {
            return (0, 0)
        }
        return (Int(row.int(0)), Int(row.int(1)))
    }

    /// Followers (`following == false`) or followees of `userId`, newest edge first, each with
    /// the viewer's follow state. Cursor: the last entry's edge key.
    /// - Throws: `ServiceError` 400 `invalid_cursor`, `SQLiteError`.
    static func list(
        _ userId: String, following: Bool, viewerId: String, page: PageRequest, on c: SQLiteConnection
    ) throws -> Page<Graph.Entry> {
        let before = try Cursor.decode(page.cursor)
        let limit = Cursor.clampLimit(page.limit)
        let sql =
            following
            ? "SELECT key, followee_id FROM follows WHERE follower_id = ? AND key < ? ORDER BY key DESC LIMIT ?"
            : "SELECT key, follower_id FROM follows WHERE followee_id = ? AND key < ? ORDER BY key DESC LIMIT ?"
        let rows = try c.query(sql, [userId, before, limit + 1])
        let shown = rows.prefix(limit)
        let entries = try shown.map { r in
            Graph.Entry(
                userId: r.string(1), followState: try state(viewer: viewerId, toward: r.string(1), on: c))
        }
        let next = rows.count > limit ? shown.last.map { Cursor.encode($0.int(0)) } : nil
        return Page(items: entries, nextCursor: next)
    }

    /// The viewer's follow state toward each of `userIds`.
    static func states(viewer: String, userIds: [String], on c: SQLiteConnection) throws -> [String:
        FollowState]
    {
        var states: [String: FollowState] = [:]
        for id in userIds where states[id] == nil {
            states[id] = try state(viewer: viewer, toward: id, on: c)
        }
        return states
    }
}
