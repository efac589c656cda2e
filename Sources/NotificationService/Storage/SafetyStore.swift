import Messages
import Storage
import Wire

/// Blocks, mutes, follow requests and removing a follower (API.md "Privacy and safety") on the
/// follow graph's database, either engine (tables: `SafetySchema`). Like Mastodon's BlockService,
/// a block does every consequence in its one transaction: the follows both ways, the pending
/// requests both ways and the notifications between the two go, and the event that tells
/// ProfileService is written with them.
struct SafetyStore: Sendable {
    let database: Database
    let notifications: NotificationWriter

    /// Blocks or unblocks `target` for `user`; idempotent (nothing changes, no event, when it
    /// stands already). - Returns: whether `user` blocks `target` afterwards.
    /// - Throws: 404 `not_found` when `target` blocks `user` (to them `target` does not exist),
    ///   the engine's error.
    func setBlock(user: UserRef, target: UserRef, blocking: Bool, nowMs: Int64) async throws -> Bool {
        try await database.write { tx in try Self.setBlock(user: user, target: target, blocking: blocking, nowMs: nowMs, in: tx) }
    }

    /// `setBlock(user:target:blocking:nowMs:)` in `tx`. - Throws: as it.
    static func setBlock(user: UserRef, target: UserRef, blocking: Bool, nowMs: Int64, in tx: Transaction) throws -> Bool {
        let me = try Keys.user(user.id, in: tx)
        let them = try Keys.user(target.id, in: tx)
        // A follow, a notification or a fan-out batch of either that raced this block is done
        // before it goes on (PostgreSQL; see `Relations.lockPair`).
        try Relations.lockPair(me, them, shared: false, in: tx)
        for owner in [min(me, them), max(me, them)] { try Relations.lockFanOut(of: owner, shared: false, in: tx) }
        try AccountStates.requireVisible([me, them], on: tx.connection)
        if try Relations.blocks(them, me, on: tx.connection) { throw ServiceError.notFound("user") }
        guard blocking else {
            try tx.query("DELETE FROM blocks WHERE blocker = \(me) AND blocked = \(them)")
            if tx.connection.changes > 0 {
                try tx.emit(Notifications.BlockChanged(blockerId: user.id, blockedId: target.id, blocking: false))
            }
            return false
        }
        try tx.query(
            """
            INSERT INTO blocks(blocker, blocked, created_at) VALUES (\(me), \(them), \(nowMs))
            ON CONFLICT (blocker, blocked) DO NOTHING
            """)
        guard tx.connection.changes > 0 else { return true }
        // The follows both ways (with their counts, follow notifications and events), the
        // requests both ways, and every other notification between the two.
        let (mine, theirs) = ((me, user.id), (them, target.id))
        try SQLFollowStore.removeEdge(from: mine, to: theirs, in: tx)
        try SQLFollowStore.removeEdge(from: theirs, to: mine, in: tx)
        try SQLFollowStore.removeRequest(from: me, to: them, in: tx)
        try SQLFollowStore.removeRequest(from: them, to: me, in: tx)
        try NotificationRemoval.remove(
            try NotificationRemoval.rows(
                where: "(recipient = \(me) AND actor = \(them)) OR (recipient = \(them) AND actor = \(me))",
                on: tx.connection),
            in: tx)
        try tx.emit(Notifications.BlockChanged(blockerId: user.id, blockedId: target.id, blocking: true))
        return true
    }

    /// Mutes or unmutes `target` for `user`; idempotent, and nobody is told.
    /// - Returns: whether `user` mutes `target` afterwards.
    /// - Throws: 404 `not_found` when `target` blocks `user` or either is hidden
    ///   (`AccountStates`), the engine's error.
    func setMute(user: UserRef, target: UserRef, muting: Bool, nowMs: Int64) async throws -> Bool {
        try await database.write { tx in
            let me = try Keys.user(user.id, in: tx)
            let them = try Keys.user(target.id, in: tx)
            try Relations.lockAccounts([me, them], shared: true, in: tx)
            try AccountStates.requireVisible([me, them], on: tx.connection)
            if try Relations.blocks(them, me, on: tx.connection) { throw ServiceError.notFound("user") }
            if muting {
                try tx.query(
                    """
                    INSERT INTO mutes(muter, muted, created_at) VALUES (\(me), \(them), \(nowMs))
                    ON CONFLICT (muter, muted) DO NOTHING
                    """)
            } else {
                try tx.query("DELETE FROM mutes WHERE muter = \(me) AND muted = \(them)")
            }
            return muting
        }
    }

    /// One of `userId`'s lists, newest first, without the hidden accounts (`AccountStates`: their
    /// rows stay, and come back when a suspension is lifted).
    /// - Throws: 400 `invalid_cursor`, the engine's error.
    func list(_ list: Notifications.SafetyList, userId: String, page: PageRequest) async throws
        -> Page<Notifications.UserSince>
    {
        let name = "safety.\(list.rawValue)"
        let before = try database.pageCursors.decode(page.cursor, list: name, owner: userId) ?? Int64.max
        let limit = page.clampedLimit
        let (table, owner, other): (SQL, SQL, SQL) =
            switch list {
            case .blocks: ("blocks", "blocker", "blocked")
            case .mutes: ("mutes", "muter", "muted")
            case .followRequests: ("follow_requests", "target", "requester")
            }
        return try await database.read { c in
            guard let user = try Keys.existingUser(userId, on: c) else { return Page(items: [], nextCursor: nil) }
            let rows = try c.query(
                """
                SELECT t.key, i.id, t.created_at FROM \(table) t JOIN identities i ON i.key = t.\(other)
                WHERE t.\(owner) = \(user) AND t.key < \(before) AND \(AccountStates.active("t.\(other)"))
                ORDER BY t.key DESC LIMIT \(limit + 1)
                """)
            let shown = rows.prefix(limit)
            return Page(
                items: try shown.map {
                    .init(userId: try $0.string("id"), createdAt: Timestamp.format(ms: try $0.int64("created_at")))
                },
                nextCursor: rows.count > limit
                    ? try shown.last.map { database.pageCursors.encode(list: name, owner: userId, key: try $0.int64("key")) }
                    : nil)
        }
    }

    /// Accepts or declines `requester`'s pending request to follow `user`.
    /// - Throws: 404 `not_found` when none is pending, the engine's error.
    func answer(user: UserRef, requester: UserRef, accept: Bool, nowMs: Int64) async throws {
        let notifications = self.notifications
        try await database.write { tx in
            guard let me = try Keys.existingUser(user.id, on: tx.connection),
                let them = try Keys.existingUser(requester.id, on: tx.connection)
            else { throw ServiceError.notFound("follow request") }
            try Relations.lockPair(me, them, shared: false, in: tx)
            try AccountStates.requireVisible([me, them], on: tx.connection)
            guard let notify = try SQLFollowStore.removeRequest(from: them, to: me, suppressRepeat: !accept, in: tx)
            else { throw ServiceError.notFound("follow request") }
            if accept {
                try Self.accept(
                    requester: requester, user: user, keys: (them, me), notifyPosts: notify,
                    nowMs: nowMs, notifications: notifications, in: tx)
            }
        }
    }

    /// Makes the follow of an accepted request (its request already removed), in `tx`: the edge,
    /// counts and event, the owner's `follow` notification, the requester's `follow_accepted`.
    /// - Throws: the engine's error.
    static func accept(
        requester: UserRef, user: UserRef, keys: (Int64, Int64), notifyPosts: Bool, nowMs: Int64,
        notifications: NotificationWriter, in tx: Transaction
    ) throws {
        if try Relations.follows(keys.0, keys.1, on: tx.connection) { return }
        try SQLFollowStore.addEdge(
            from: requester, to: user, keys: keys, notifyPosts: notifyPosts, nowMs: nowMs, in: tx)
        try notifications.insert(
            NewNotification(
                recipientId: user.id, actorId: requester.id, type: .follow, detail: nil, post: nil, createdAt: nowMs),
            in: tx)
        try notifications.insert(
            NewNotification(
                recipientId: requester.id, actorId: user.id, type: .followAccepted, detail: nil, post: nil,
                createdAt: nowMs),
            in: tx)
    }

    /// Records whether `user` (an id) has a private account, as ProfileService's event says, in
    /// `tx`; switching it off accepts every pending request to it (API.md).
    /// - Throws: the engine's error.
    static func setPrivate(
        user: UserRef, isPrivate: Bool, nowMs: Int64, notifications: NotificationWriter, in tx: Transaction
    ) throws {
        let key = try Keys.user(user.id, in: tx)
        if isPrivate {
            try tx.query("INSERT INTO private_accounts(\"user\") VALUES (\(key)) ON CONFLICT(\"user\") DO NOTHING")
            return
        }
        try tx.query("DELETE FROM private_accounts WHERE \"user\" = \(key)")
        guard tx.connection.changes > 0 else { return }
        let pending = try tx.query(
            """
            SELECT r.requester, i.id, i.username FROM follow_requests r JOIN identities i ON i.key = r.requester
            WHERE r.target = \(key) ORDER BY r.key
            """)
        for row in pending {
            let requesterKey = try row.int64("requester")
            let requester = UserRef(id: try row.string("id"), username: try row.optionalString("username") ?? "")
            guard
                let notify = try SQLFollowStore.removeRequest(
                    from: requesterKey, to: key, suppressRepeat: false, in: tx)
            else { continue }
            try accept(
                requester: requester, user: user, keys: (requesterKey, key), notifyPosts: notify, nowMs: nowMs,
                notifications: notifications, in: tx)
        }
    }
}
