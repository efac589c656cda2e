import Messages
import Storage

/// A user as the follow graph names them: id and current username.
struct UserRef: Sendable, Equatable {
    var id: String
    var username: String
}

/// The follow graph (`edges`, `follow_counts`): every statement on those tables. Edge changes
/// and their counters happen in one transaction, and only on a real change, so counts always
/// equal the number of edges.
protocol FollowStore: Sendable {
    /// Creates the edge (or changes its `notifyPosts` when given), emits `notification.follow.changed`
    /// on a real change, and stores the followee's `follow` notification (deduplicated:
    /// following again after an unfollow makes a new one, never pushed twice), in one transaction.
    func follow(follower: UserRef, followee: UserRef, notifyPosts: Bool?, nowMs: Int64) async throws
        -> Notifications.Follow.Reply

    /// Removes the edge if present (emitting `notification.follow.changed`) and the followee's
    /// `follow` notification from the follower (`NotificationRemoval`: its group and the badge
    /// with it; following again notifies again, without a second push); idempotent.
    func unfollow(followerId: String, followeeId: String) async throws

    /// Counts and the viewer's relation, read in one snapshot.
    func header(userId: String, viewerId: String) async throws -> Notifications.Header.Reply

    /// The same for the user named `username` (case-insensitive), with the name looked up in the
    /// same snapshot: one read and each identity key looked up once. Returns nil when the replica
    /// does not know the name (the caller asks AuthService then).
    func header(username: String, viewerId: String) async throws -> Notifications.Header.Reply?

    /// Followers (`following == false`) or followees of `userId`, newest edge first, each with
    /// the viewer's follow state. - Throws: 400 `invalid_cursor`.
    func edges(userId: String, following: Bool, viewerId: String, page: PageRequest) async throws -> Page<Notifications.Entry>

    /// The viewer's follow state toward each of `userIds`.
    func states(viewerId: String, userIds: [String]) async throws -> [String: FollowState]
}

/// `FollowStore` on a SQL `Database`, either engine.
struct SQLFollowStore: FollowStore {
    let database: Database
    let notifications: NotificationWriter

    /// Whether user key `follower` follows user key `followee`.
    static func follows(_ follower: Int64, _ followee: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM edges WHERE follower = \(follower) AND followee = \(followee)")
    }

    /// The viewer's relation to `user` (ids): `self`, `following` or `not_following`.
    static func state(viewer: String, toward user: String, on c: DatabaseConnection) throws -> FollowState {
        if viewer == user { return .self }
        guard let v = try Keys.existingUser(viewer, on: c), let u = try Keys.existingUser(user, on: c) else {
            return .notFollowing
        }
        return try follows(v, u, on: c) ? .following : .notFollowing
    }

    func follow(follower: UserRef, followee: UserRef, notifyPosts: Bool?, nowMs: Int64) async throws
        -> Notifications.Follow.Reply
    {
        let notifications = self.notifications
        return try await database.write { tx in
            let from = try Keys.user(follower.id, in: tx)
            let to = try Keys.user(followee.id, in: tx)
            if let current = try tx.connection.scalar(
                "SELECT notify_posts FROM edges WHERE follower = \(from) AND followee = \(to)")
            {
                guard let wanted = notifyPosts, wanted != (current != 0) else {
                    return .init(followState: .following, notifyPosts: current != 0)
                }
                try tx.query("UPDATE edges SET notify_posts = \(wanted) WHERE follower = \(from) AND followee = \(to)")
                try tx.emit(
                    Notifications.FollowChanged(
                        followerId: follower.id, followeeId: followee.id, following: true, notifyPosts: wanted))
                return .init(followState: .following, notifyPosts: wanted)
            }
            let notify = notifyPosts ?? false
            // Another replica's follow of the same pair may have made the edge since the read
            // above (PostgreSQL, read committed): run again, and find it.
            try tx.query(
                """
                INSERT INTO edges(follower, followee, notify_posts, created_at) VALUES (\(from), \(to), \(notify), \(nowMs))
                ON CONFLICT (follower, followee) DO NOTHING
                """)
            guard tx.connection.changes > 0 else { throw WriteConflict(reason: "a concurrent follow made the edge") }
            try Self.adjust(follower: from, followee: to, by: 1, in: tx)
            try tx.emit(
                Notifications.FollowChanged(
                    followerId: follower.id, followeeId: followee.id, following: true, notifyPosts: notify))
            try notifications.insert(
                NewNotification(
                    recipientId: followee.id, actorId: follower.id, type: .follow, detail: nil, post: nil, createdAt: nowMs),
                in: tx)
            return .init(followState: .following, notifyPosts: notify)
        }
    }

    func unfollow(followerId: String, followeeId: String) async throws {
        try await database.write { tx in
            guard let from = try Keys.existingUser(followerId, on: tx.connection),
                let to = try Keys.existingUser(followeeId, on: tx.connection),
                let row = try tx.query(
                    "DELETE FROM edges WHERE follower = \(from) AND followee = \(to) RETURNING notify_posts"
                ).first
            else { return }
            try Self.adjust(follower: from, followee: to, by: -1, in: tx)
            try NotificationRemoval.remove(
                try NotificationRemoval.rows(
                    where: "recipient = \(to) AND actor = \(from) AND type = \(NotificationType.follow.rawValue) AND once = 0",
                    on: tx.connection),
                suppressRepeat: true, in: tx)
            try tx.emit(
                Notifications.FollowChanged(
                    followerId: followerId, followeeId: followeeId, following: false,
                    notifyPosts: try row.bool("notify_posts")))
        }
    }

    /// Moves both counters by `delta`, never below zero.
    static func adjust(follower: Int64, followee: Int64, by delta: Int, in tx: Transaction) throws {
        try adjust(user: followee, followers: delta, following: 0, in: tx)
        try adjust(user: follower, followers: 0, following: delta, in: tx)
    }

    /// Moves one user's counters, never below zero.
    static func adjust(user: Int64, followers: Int, following: Int, in tx: Transaction) throws {
        // `user` is quoted: a reserved word in PostgreSQL.
        let max = SQL.greatest
        try tx.query(
            """
            INSERT INTO follow_counts("user", followers, following) VALUES (\(user), \(max)(\(followers), 0),
                \(max)(\(following), 0))
            ON CONFLICT("user") DO UPDATE
            SET followers = \(max)(follow_counts.followers + \(followers), 0),
                following = \(max)(follow_counts.following + \(following), 0)
            """)
    }

    func header(userId: String, viewerId: String) async throws -> Notifications.Header.Reply {
        try await database.read { c in
            try c.snapshot {
                let key = try Keys.existingUser(userId, on: c)
                let counts = try key.flatMap {
                    try c.queryOne("SELECT followers, following FROM follow_counts WHERE \"user\" = \($0)")
                }
                return Notifications.Header.Reply(
                    userId: userId, followers: try counts?.int("followers") ?? 0,
                    following: try counts?.int("following") ?? 0,
                    followState: try Self.state(viewer: viewerId, toward: userId, on: c))
            }
        }
    }

    func header(username: String, viewerId: String) async throws -> Notifications.Header.Reply? {
        guard let name = Username.lookupKey(username) else { return nil }
        return try await database.read { c in
            try c.snapshot { () -> Notifications.Header.Reply? in
                guard
                    let row = try c.queryOne(
                        """
                        SELECT i.id, i.key, c.followers, c.following
                        FROM identities i LEFT JOIN follow_counts c ON c."user" = i.key WHERE i.username = \(name)
                        """)
                else { return nil }
                let userId = try row.string("id")
                let state: FollowState
                if viewerId == userId {
                    state = .self
                } else if let viewer = try Keys.existingUser(viewerId, on: c) {
                    state = try Self.follows(viewer, try row.int64("key"), on: c) ? .following : .notFollowing
                } else {
                    state = .notFollowing
                }
                return Notifications.Header.Reply(
                    userId: userId, followers: Int(try row.optionalInt64("followers") ?? 0),
                    following: Int(try row.optionalInt64("following") ?? 0), followState: state)
            }
        }
    }

    func edges(userId: String, following: Bool, viewerId: String, page: PageRequest) async throws -> Page<Notifications.Entry> {
        let list = following ? "following" : "followers"
        let before = try database.pageCursors.decode(page.cursor, list: list, owner: userId) ?? Int64.max
        let limit = page.clampedLimit
        return try await database.read { c in
            try c.snapshot {
                guard let user = try Keys.existingUser(userId, on: c) else { return Page(items: [], nextCursor: nil) }
                let viewer = try Keys.existingUser(viewerId, on: c) ?? -1
                let (mine, other): (SQL, SQL) = following ? ("follower", "followee") : ("followee", "follower")
                let rows = try c.query(
                    """
                    SELECT e.key, i.id AS user_id, EXISTS(
                        SELECT 1 FROM edges v WHERE v.follower = \(viewer) AND v.followee = e.\(other)) AS viewer_follows
                    FROM edges e JOIN identities i ON i.key = e.\(other)
                    WHERE e.\(mine) = \(user) AND e.key < \(before) ORDER BY e.key DESC LIMIT \(limit + 1)
                    """)
                let shown = rows.prefix(limit)
                let entries = try shown.map { r in
                    let other = try r.string("user_id")
                    let state: FollowState =
                        other == viewerId ? .self : try r.bool("viewer_follows") ? .following : .notFollowing
                    return Notifications.Entry(userId: other, followState: state)
                }
                return Page(
                    items: entries,
                    nextCursor: rows.count > limit
                        ? try shown.last.map { database.pageCursors.encode(list: list, owner: userId, key: try $0.int64("key")) }
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
