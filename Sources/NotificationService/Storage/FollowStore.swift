import Shared

/// A user as the follow graph names them: id and current username.
struct UserRef: Sendable, Equatable {
    var id: String
    var username: String
}

/// The follow graph (`follows`, `follow_counts`): every statement on those tables. Edge changes
/// and their counters happen in one transaction, and only on a real change, so counts always
/// equal the number of edges.
protocol FollowStore: Sendable {
    /// Creates the edge (or changes its `notifyPosts` when given), emits `graph.follow.changed`
    /// on a real change, and stores the followee's `follow` notification (deduplicated:
    /// following again after an unfollow makes none), in one transaction.
    func follow(follower: UserRef, followee: UserRef, notifyPosts: Bool?, now: String) async throws
        -> Graph.Follow.Reply

    /// Removes the edge if present (emitting `graph.follow.changed`); idempotent.
    func unfollow(followerId: String, followeeId: String) async throws

    /// Counts and the viewer's relation, read in one snapshot.
    func header(userId: String, viewerId: String) async throws -> Graph.Header.Reply

    /// Followers (`following == false`) or followees of `userId`, newest edge first, each with
    /// the viewer's follow state. - Throws: 400 `invalid_cursor`.
    func edges(userId: String, following: Bool, viewerId: String, page: PageRequest) async throws -> Page<Graph.Entry>

    /// The viewer's follow state toward each of `userIds`.
    func states(viewerId: String, userIds: [String]) async throws -> [String: FollowState]
}

/// `FollowStore` on SQLite.
struct SQLiteFollowStore: FollowStore {
    let database: Database

    /// The viewer's relation to `user`: `self`, `following` or `not_following`.
    static func state(viewer: String, toward user: String, on c: SQLiteConnection) throws -> FollowState {
        if viewer == user { return .self }
        return try c.exists("SELECT 1 FROM follows WHERE follower_id = ? AND followee_id = ?", [viewer, user])
            ? .following : .notFollowing
    }

    /// One page of a followee's `notifyPosts` followers after a follower id (`""` for the
    /// first), in follower-id order (the new-post fan-out).
    static func notifyPostsFollowers(of followee: String, after: String, limit: Int, on c: SQLiteConnection) throws
        -> [String]
    {
        try c.query(
            """
            SELECT follower_id FROM follows
            WHERE followee_id = ? AND notify_posts = 1 AND follower_id > ? ORDER BY follower_id LIMIT ?
            """, [followee, after, limit]
        ).map { try $0.string("follower_id") }
    }

    func follow(follower: UserRef, followee: UserRef, notifyPosts: Bool?, now: String) async throws
        -> Graph.Follow.Reply
    {
        try await database.write { tx in
            if let current = try tx.connection.scalar(
                "SELECT notify_posts FROM follows WHERE follower_id = ? AND followee_id = ?", [follower.id, followee.id])
            {
                guard let wanted = notifyPosts, wanted != (current != 0) else {
                    return .init(followState: .following, notifyPosts: current != 0)
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
            try Self.adjust(follower: follower.id, followee: followee.id, by: 1, in: tx)
            try tx.emit(
                Graph.FollowChanged(followerId: follower.id, followeeId: followee.id, following: true, notifyPosts: notify))
            try SQLiteNotificationStore.insert(
                NewNotification(
                    recipientId: followee.id, actorId: follower.id, type: "follow", objectId: followee.id, detail: nil,
                    post: nil, createdAt: now), in: tx)
            return .init(followState: .following, notifyPosts: notify)
        }
    }

    func unfollow(followerId: String, followeeId: String) async throws {
        try await database.write { tx in
            guard
                let row = try tx.query(
                    "DELETE FROM follows WHERE follower_id = ? AND followee_id = ? RETURNING notify_posts",
                    [followerId, followeeId]
                ).first
            else { return }
            try Self.adjust(follower: followerId, followee: followeeId, by: -1, in: tx)
            try tx.emit(
                Graph.FollowChanged(
                    followerId: followerId, followeeId: followeeId, following: false,
                    notifyPosts: try row.bool("notify_posts")))
        }
    }

    /// Moves both counters by `delta` (±1), never below zero.
    private static func adjust(follower: String, followee: String, by delta: Int, in tx: Transaction) throws {
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

    func header(userId: String, viewerId: String) async throws -> Graph.Header.Reply {
        try await database.read { c in
            try c.snapshot {
                let counts = try c.queryOne("SELECT followers, following FROM follow_counts WHERE user_id = ?", [userId])
                return Graph.Header.Reply(
                    userId: userId, followers: try counts?.int("followers") ?? 0,
                    following: try counts?.int("following") ?? 0,
                    followState: try Self.state(viewer: viewerId, toward: userId, on: c))
            }
        }
    }

    func edges(userId: String, following: Bool, viewerId: String, page: PageRequest) async throws -> Page<Graph.Entry> {
        let list = following ? "following" : "followers"
        let before = try PageCursor.decode(page.cursor, list: list, owner: userId) ?? Int64.max
        let limit = page.clampedLimit
        return try await database.read { c in
            try c.snapshot {
                let sql =
                    following
                    ? "SELECT key, followee_id AS user_id FROM follows WHERE follower_id = ? AND key < ? ORDER BY key DESC LIMIT ?"
                    : "SELECT key, follower_id AS user_id FROM follows WHERE followee_id = ? AND key < ? ORDER BY key DESC LIMIT ?"
                let rows = try c.query(sql, [userId, before, limit + 1])
                let shown = rows.prefix(limit)
                let entries = try shown.map { r in
                    let other = try r.string("user_id")
                    return Graph.Entry(userId: other, followState: try Self.state(viewer: viewerId, toward: other, on: c))
                }
                return Page(
                    items: entries,
                    nextCursor: rows.count > limit
                        ? try shown.last.map { PageCursor.encode(list: list, owner: userId, key: try $0.int64("key")) }
                        : nil)
            }
        }
    }

    func states(viewerId: String, userIds: [String]) async throws -> [String: FollowState] {
        try await database.read { c in
            try c.snapshot {
                var states: [String: FollowState] = [:]
                for id in userIds where states[id] == nil {
                    states[id] = try Self.state(viewer: viewerId, toward: id, on: c)
                }
                return states
            }
        }
    }
}
