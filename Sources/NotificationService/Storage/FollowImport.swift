import Messages
import Storage
import Wire

/// The SQL of `notification.import_follows` (on `edges` and `follow_counts`), set-based: one INSERT of
/// every new edge from a JSON array of follower keys, one upsert of their `following` counters,
/// one of the followee's `followers`, in the caller's transaction, so counts always equal the
/// number of edges. Makes no notifications.
enum FollowImport {
    /// Creates the edges `follower → followee` that do not exist yet (existing ones keep their
    /// `notify_posts`), moves the counters by the edges created, and emits one
    /// `notification.follows.imported` when any was.
    /// - Parameters:
    ///   - followers: distinct (key, id) pairs, none the followee, in request order.
    ///   - nowMs: the edges' `created_at` (Unix ms).
    /// - Returns: the ids of the followers whose edge was created, in `followers` order.
    /// - Throws: the engine's error, an encoding error.
    static func importFollows(
        followee: (key: Int64, id: String), followers: [(key: Int64, id: String)], notifyPosts: Bool, nowMs: Int64,
        in tx: Transaction
    ) throws -> [String] {
        let keys = String(decoding: try WireJSON.encode(followers.map(\.key)), as: UTF8.self)
        // `WHERE true` keeps SQLite from reading ON CONFLICT as part of the SELECT's join. A JSON
        // array of keys (`SQL.integers(inJSONArray:)`).
        let created = Set(
            try tx.query(
                """
                INSERT INTO edges(follower, followee, notify_posts, created_at)
                SELECT k.value, \(followee.key), \(notifyPosts), \(nowMs) FROM (\(SQL.integers(inJSONArray: keys))) k WHERE true
                ON CONFLICT(follower, followee) DO NOTHING
                RETURNING follower
                """
            ).map { try $0.int64("follower") })
        if created.isEmpty { return [] }
        // In key order: imports running at once (two replicas) lock the counters in the same
        // order, never each other's in reverse (a deadlock).
        let sorted = String(decoding: try WireJSON.encode(created.sorted()), as: UTF8.self)
        try tx.query(
            """
            INSERT INTO follow_counts("user", followers, following)
            SELECT k.value, 0, 1 FROM (\(SQL.integers(inJSONArray: sorted))) k WHERE true
            ON CONFLICT("user") DO UPDATE SET following = follow_counts.following + 1
            """)
        try SQLFollowStore.adjust(user: followee.key, followers: created.count, following: 0, in: tx)
        // RETURNING gives no order guarantee: the event lists them in request order.
        let ordered = followers.filter { created.contains($0.key) }.map(\.id)
        try tx.emit(Notifications.FollowsImported(followeeId: followee.id, followerIds: ordered, notifyPosts: notifyPosts))
        return ordered
    }
}
