import Shared

/// The SQL of `graph.import_follows` (on `follows` and `follow_counts`), set-based: one INSERT
/// of every new edge from a JSON array of follower ids, one upsert of their `following`
/// counters, one of the followee's `followers`, in the caller's transaction, so counts always
/// equal the number of edges. Makes no notifications.
enum FollowImport {
    /// Creates the edges `follower → followeeId` that do not exist yet (existing ones keep their
    /// `notify_posts`), moves the counters by the edges created, and emits one
    /// `graph.follows.imported` when any was.
    /// - Parameters:
    ///   - followerIds: distinct ids, none equal to `followeeId`.
    ///   - now: the edges' `created_at` (RFC 3339).
    /// - Returns: the followers whose edge was created, in `followerIds` order.
    /// - Throws: `SQLiteError`, an encoding error.
    static func importFollows(
        followeeId: String, followerIds: [String], notifyPosts: Bool, now: String, in tx: Transaction
    ) throws -> [String] {
        let ids = String(decoding: try WireJSON.encode(followerIds), as: UTF8.self)
        // `WHERE true` keeps SQLite from reading ON CONFLICT as part of the SELECT's join.
        let created = try tx.query(
            """
            INSERT INTO follows(follower_id, followee_id, notify_posts, created_at)
            SELECT value, ?, ?, ? FROM json_each(?) WHERE true
            ON CONFLICT(follower_id, followee_id) DO NOTHING
            RETURNING follower_id
            """, [followeeId, notifyPosts, now, ids]
        ).map { try $0.string("follower_id") }
        if created.isEmpty { return [] }
        try tx.query(
            """
            INSERT INTO follow_counts(user_id, followers, following)
            SELECT value, 0, 1 FROM json_each(?) WHERE true
            ON CONFLICT(user_id) DO UPDATE SET following = following + 1
            """, [String(decoding: try WireJSON.encode(created), as: UTF8.self)])
        try tx.query(
            """
            INSERT INTO follow_counts(user_id, followers, following) VALUES (?, ?, 0)
            ON CONFLICT(user_id) DO UPDATE SET followers = followers + excluded.followers
            """, [followeeId, created.count])
        // RETURNING gives no order guarantee: the event lists them in request order.
        let made = Set(created)
        let ordered = followerIds.filter { made.contains($0) }
        try tx.emit(Graph.FollowsImported(followeeId: followeeId, followerIds: ordered, notifyPosts: notifyPosts))
        return ordered
    }
}
