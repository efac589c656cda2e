import Messages
import Storage
import Wire

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

    /// The viewer's relation to `user` (ids): `self`, `following`, `requested` or `not_following`.
    static func state(viewer: String, toward user: String, on c: DatabaseConnection) throws -> FollowState {
        if viewer == user { return .self }
        guard let v = try Keys.existingUser(viewer, on: c), let u = try Keys.existingUser(user, on: c) else {
            return .notFollowing
        }
        return try Relations.state(v, toward: u, on: c)
    }

    /// The header of `user` (key, id) with `counts` as `viewerId` sees it.
    /// - Throws: 404 when the user blocks the viewer (to them the user does not exist), or is
    ///   hidden (suspended, deleting, erased: `AccountStates`).
    static func header(
        user: Int64, userId: String, followers: Int, following: Int, viewerId: String, on c: DatabaseConnection
    ) throws -> Notifications.Header.Reply {
        guard viewerId != userId else {
            return .init(userId: userId, followers: followers, following: following, followState: .self)
        }
        try AccountStates.requireVisible([user], on: c)
        guard let viewer = try Keys.existingUser(viewerId, on: c) else {
            return .init(userId: userId, followers: followers, following: following, followState: .notFollowing)
        }
        if try Relations.blocks(user, viewer, on: c) { throw ServiceError.notFound("user") }
        return .init(
            userId: userId, followers: followers, following: following,
            followState: try Relations.state(viewer, toward: user, on: c),
            blocking: try Relations.blocks(viewer, user, on: c), muting: try Relations.mutes(viewer, user, on: c),
            followsYou: try Relations.follows(user, viewer, on: c))
    }

    func follow(follower: UserRef, followee: UserRef, notifyPosts: Bool?, nowMs: Int64) async throws
        -> Notifications.Follow.Reply
    {
        let notifications = self.notifications
        return try await database.write { tx in
            try Self.follow(
                follower: follower, followee: followee, notifyPosts: notifyPosts, nowMs: nowMs, notifications: notifications,
                in: tx)
        }
    }

    /// `follow(follower:followee:notifyPosts:nowMs:)` in `tx`, its notifications through
    /// `notifications`. - Throws: as it.
    static func follow(
        follower: UserRef, followee: UserRef, notifyPosts: Bool?, nowMs: Int64, notifications: NotificationWriter,
        in tx: Transaction
    ) throws -> Notifications.Follow.Reply {
        let from = try Keys.user(follower.id, in: tx)
        let to = try Keys.user(followee.id, in: tx)
        try Relations.lockPair(from, to, shared: false, in: tx)
        // A suspended, deleted or erased account is as unknown (its lock is held: a state change
        // waits for this follow, or this follow sees it).
        try AccountStates.requireVisible([from, to], on: tx.connection)
        // To the blocked user the blocker does not exist; the blocker unblocks first.
        if try Relations.blocks(to, from, on: tx.connection) { throw ServiceError.notFound("user \(followee.username)") }
        if try Relations.blocks(from, to, on: tx.connection) {
            throw ServiceError(.blocking, message: "you block this account: unblock it first", status: 409)
        }
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
        // A private account: a request (its notifyPosts kept for the follow it may become),
        // the owner told once per pending request.
        if try Relations.isPrivate(to, on: tx.connection) {
            try tx.query(
                """
                INSERT INTO follow_requests(requester, target, notify_posts, created_at)
                VALUES (\(from), \(to), \(notify), \(nowMs))
                ON CONFLICT (requester, target) DO UPDATE SET notify_posts = excluded.notify_posts
                """)
            try notifications.insert(
                NewNotification(
                    recipientId: followee.id, actorId: follower.id, type: .followRequest, detail: nil, post: nil,
                    createdAt: nowMs),
                in: tx)
            return .init(followState: .requested, notifyPosts: notify)
        }
        try Self.addEdge(from: follower, to: followee, keys: (from, to), notifyPosts: notify, nowMs: nowMs, in: tx)
        try notifications.insert(
            NewNotification(
                recipientId: followee.id, actorId: follower.id, type: .follow, detail: nil, post: nil, createdAt: nowMs),
            in: tx)
        return .init(followState: .following, notifyPosts: notify)
    }

    /// Makes the edge `from` → `to` (keys), its counts and its `notification.follow.changed`, in
    /// `tx`.
    /// - Throws: `WriteConflict` when another replica made the edge meanwhile (PostgreSQL, read
    ///   committed: the write runs again and finds it), the engine's error.
    static func addEdge(
        from follower: UserRef, to followee: UserRef, keys: (Int64, Int64), notifyPosts: Bool, nowMs: Int64,
        in tx: Transaction
    ) throws {
        try tx.query(
            """
            INSERT INTO edges(follower, followee, notify_posts, created_at)
            VALUES (\(keys.0), \(keys.1), \(notifyPosts), \(nowMs))
            ON CONFLICT (follower, followee) DO NOTHING
            """)
        guard tx.connection.changes > 0 else { throw WriteConflict(reason: "a concurrent follow made the edge") }
        try adjust(follower: keys.0, followee: keys.1, by: 1, in: tx)
        try tx.emit(
            Notifications.FollowChanged(
                followerId: follower.id, followeeId: followee.id, following: true, notifyPosts: notifyPosts))
    }

    /// Removes the edge `from` → `to` (keys, ids) if present, in `tx`: its counts, the followee's
    /// `follow` notification from the follower (kept from a second push: API.md's undo/redo
    /// rule) and a `notification.follow.changed`.
    /// - Returns: whether there was an edge. - Throws: the engine's error.
    @discardableResult
    static func removeEdge(from: (key: Int64, id: String), to: (key: Int64, id: String), in tx: Transaction) throws -> Bool {
        guard
            let row = try tx.query(
                "DELETE FROM edges WHERE follower = \(from.key) AND followee = \(to.key) RETURNING notify_posts"
            ).first
        else { return false }
        try adjust(follower: from.key, followee: to.key, by: -1, in: tx)
        try removeNotifications(of: .follow, from: from.key, to: to.key, suppressRepeat: true, in: tx)
        try tx.emit(
            Notifications.FollowChanged(
                followerId: from.id, followeeId: to.id, following: false, notifyPosts: try row.bool("notify_posts")))
        return true
    }

    /// Removes the request `from` → `to` (keys) if pending, with its `follow_request`
    /// notification (its push not repeated when asked again), in `tx`.
    /// - Returns: the request's `notifyPosts`, nil when none was pending. - Throws: the engine's error.
    @discardableResult
    static func removeRequest(from: Int64, to: Int64, suppressRepeat: Bool = true, in tx: Transaction) throws -> Bool? {
        guard
            let row = try tx.query(
                "DELETE FROM follow_requests WHERE requester = \(from) AND target = \(to) RETURNING notify_posts"
            ).first
        else { return nil }
        try removeNotifications(of: .followRequest, from: from, to: to, suppressRepeat: suppressRepeat, in: tx)
        return try row.bool("notify_posts")
    }

    /// Removes `type` notifications of actor `from` to recipient `to`, in `tx` (`NotificationRemoval`).
    static func removeNotifications(
        of type: NotificationType, from: Int64, to: Int64, suppressRepeat: Bool, in tx: Transaction
    ) throws {
        try NotificationRemoval.remove(
            try NotificationRemoval.rows(
                where: "recipient = \(to) AND actor = \(from) AND type = \(type.rawValue)", on: tx.connection),
            suppressRepeat: suppressRepeat, in: tx)
    }

    func unfollow(followerId: String, followeeId: String) async throws {
        try await database.write { tx in
            guard let from = try Keys.existingUser(followerId, on: tx.connection),
                let to = try Keys.existingUser(followeeId, on: tx.connection)
            else { return }
            // A follow, or a request still pending: either is withdrawn.
            if try !Self.removeEdge(from: (from, followerId), to: (to, followeeId), in: tx) {
                try Self.removeRequest(from: from, to: to, in: tx)
            }
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
                guard let key = try Keys.existingUser(userId, on: c) else {
                    return Notifications.Header.Reply(
                        userId: userId, followers: 0, following: 0,
                        followState: viewerId == userId ? .self : .notFollowing)
                }
                let counts = try c.queryOne("SELECT followers, following FROM follow_counts WHERE \"user\" = \(key)")
                return try Self.header(
                    user: key, userId: userId, followers: try counts?.int("followers") ?? 0,
                    following: try counts?.int("following") ?? 0, viewerId: viewerId, on: c)
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
                return try Self.header(
                    user: try row.int64("key"), userId: try row.string("id"),
                    followers: Int(try row.optionalInt64("followers") ?? 0),
                    following: Int(try row.optionalInt64("following") ?? 0), viewerId: viewerId, on: c)
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
                let viewerKey = try Keys.existingUser(viewerId, on: c)
                // A hidden account's lists are as an unknown user's.
                if viewerId != userId { try AccountStates.requireVisible([user], on: c) }
                // To the blocked user the blocker does not exist; a private account's lists are
                // its followers' business.
                if let viewerKey, try Relations.blocks(user, viewerKey, on: c) { throw ServiceError.notFound("user") }
                guard try Relations.maySeeLists(viewerKey, of: user, on: c) else {
                    throw ServiceError(.privateAccount, message: "this account is private", status: 403)
                }
                let viewer = viewerKey ?? -1
                let (mine, other): (SQL, SQL) = following ? ("follower", "followee") : ("followee", "follower")
                // Nobody blocked either way by the viewer appears in the list, nor a hidden account
                // (its edges stay, and count).
                let rows = try c.query(
                    """
                    SELECT e.key, i.id AS user_id, EXISTS(
                            SELECT 1 FROM edges v WHERE v.follower = \(viewer) AND v.followee = e.\(other)) AS viewer_follows,
                        EXISTS(SELECT 1 FROM follow_requests r WHERE r.requester = \(viewer) AND r.target = e.\(other))
                            AS viewer_requested
                    FROM edges e JOIN identities i ON i.key = e.\(other)
                    WHERE e.\(mine) = \(user) AND e.key < \(before)
                        AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker = e.\(other) AND b.blocked = \(viewer))
                        AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker = \(viewer) AND b.blocked = e.\(other))
                        AND \(AccountStates.active("e.\(other)"))
                    ORDER BY e.key DESC LIMIT \(limit + 1)
                    """)
                let shown = rows.prefix(limit)
                let entries = try shown.map { r in
                    let other = try r.string("user_id")
                    let state: FollowState =
                        other == viewerId
                        ? .self
                        : try r.bool("viewer_follows") ? .following : try r.bool("viewer_requested") ? .requested : .notFollowing
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
