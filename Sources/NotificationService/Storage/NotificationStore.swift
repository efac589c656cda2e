import Messages
import Storage
import Wire

/// A notification to store: who gets it, who caused it, and what about.
struct NewNotification: Sendable {
    var recipientId: String
    var actorId: String
    var type: NotificationType
    /// The comment of a `comment` (its dedup key).
    var commentId: String? = nil
    /// The report of a `report_resolved` (its dedup key).
    var reportId: String? = nil
    /// See `Notifications.Notification.detail`.
    var detail: String?
    var post: Notifications.Notification.PostRef?
    /// Unix ms.
    var createdAt: Int64
    /// The actor's public fields from the event, put on the live message only (never stored):
    /// see `Notifications.Notification.actor`. Nil when the event had none (an older producer,
    /// a follow).
    var actor: PublicUser? = nil
}

/// Writes notifications (`recent_notifications`, `recipients`, `posts`) in the caller's transaction
/// and, once it commits, hands them to delivery (`NotificationPublisher`). Used by the event
/// handlers, the follow graph and the fan-out.
struct NotificationWriter: Sendable {
    let delivery: NotificationPublisher
    /// Where pushes are queued, in the same transaction as each notification (nil: push is off).
    var push: PushQueue? = nil

    /// The next seq of `recipient` as an SQL expression over `recipient` (a column, or a bound
    /// key): one above the largest of the newest row in the recent table, the newest ever merged
    /// into the big one and the floor left by deletions.
    static func nextSeq(_ recipient: SQL) -> SQL {
        "\(head(recipient)) + 1"
    }

    /// The head seq of `recipient` as an SQL expression (see `nextSeq`): two index seeks, one
    /// into the small recent table and one into `recipients` (`merged_head`, `head_floor`),
    /// never into the big table: the newest merged row of each of a fan-out's 100,000
    /// recipients sits on a different page of it, and reading those was most of a fan-out's
    /// time on a database of millions of notifications. (`recipient` appears twice: a bound key
    /// is bound twice.)
    static func head(_ recipient: SQL) -> SQL {
        """
        \(SQL.greatest)(COALESCE((SELECT MAX(h.seq) FROM recent_notifications h WHERE h.recipient = \(recipient)), 0),
            COALESCE((SELECT \(SQL.greatest)(f.merged_head, f.head_floor) FROM recipients f
                WHERE f.recipient = \(recipient)), 0))
        """
    }

    /// Runs an insert that takes recipients' next seqs, turning a clash on a seq into
    /// `WriteConflict`, which the database answers by running the write again.
    ///
    /// One writer per database never clashes. Replicas do: two transactions read the same head
    /// and take the same next seq; the second's insert waits for the first to commit and then
    /// fails on the primary key (recipient, seq). Run again, its statements see the first's row
    /// and take the seq after it, so each recipient's seq stays strictly increasing, without a
    /// gap or a repeat, whichever replica writes.
    /// - Throws: `WriteConflict`, or the engine's error.
    static func seqConflictsRetried<T>(_ insert: @autoclosure () throws -> T) throws -> T {
        do { return try insert() } catch let error as DatabaseError
            where error.kind == .uniqueViolation && error.constraint == "recent_notifications_pkey"
        {
            throw WriteConflict(reason: "another replica took the same notification seq")
        }
    }

    /// Runs `body`, the statements that take recipients' next seqs, with PostgreSQL's sequential
    /// scans priced out (`SET LOCAL enable_seqscan`, back on afterwards), so the `head`
    /// subqueries read `recent_notifications` through its (recipient, seq) key whatever the
    /// table's statistics say. That table swings between empty (just after a merge) and tens of
    /// thousands of rows; planned from statistics taken while it was empty, a head subquery
    /// scanned the whole table once per recipient: a 10,000-follower fan-out's insert took 3.2 s
    /// instead of about 0.04 s (PostgreSQL's log, `run-local --scale 2`, LoadTest celebrity after a
    /// likes run). SQLite plans by its indexes without statistics and is left alone (the
    /// statements are PostgreSQL's only: nothing runs there).
    /// - Throws: what `body` throws, or `DatabaseError`.
    static func byKey<T>(_ c: DatabaseConnection, _ body: () throws -> T) throws -> T {
        try c.execute(seqscanOff)
        let result = try body()
        try c.execute(seqscanOn)
        return result
    }

    private static let seqscanOff = SQL.postgresOnly("SET LOCAL enable_seqscan = off")
    private static let seqscanOn = SQL.postgresOnly("SET LOCAL enable_seqscan = on")

    /// Stores `n` with the recipient's next seq unless it is a self-notification or repeats one
    /// already notified (same recipient, actor, type and object: the post of a like or tag, the
    /// comment of a comment, none for a follow), in `tx`; delivered after the commit.
    /// - Returns: the stored notification, or nil when none was stored.
    /// - Throws: the engine's error.
    @discardableResult
    func insert(_ n: NewNotification, in tx: Transaction) throws -> Notifications.Notification? {
        // A `report_resolved` is the one notification whose actor is its recipient (the reporter:
        // its text names nobody, and never the moderator).
        guard n.recipientId != n.actorId || n.type == .reportResolved else { return nil }
        let recipient = try Keys.user(n.recipientId, in: tx)
        let actor = try Keys.user(n.actorId, in: tx)
        // A like's or comment's post is the recipient's; a tag's the actor's.
        let owner: Int64? =
            switch n.type {
            case .like, .comment: recipient
            case .tag, .post: actor
            case .follow, .followRequest, .followAccepted, .reportResolved: nil
            }
        let post = try n.post.map { try Keys.post($0.id, thumbnailURL: $0.thumbnailURL, owner: owner, in: tx) }
        let once: Int64? =
            switch n.type {
            case .like, .tag: post
            case .follow: 0
            case .comment: Self.objectKey(n.commentId ?? "")
            case .post: nil  // once per post by `FanOutWorker.start`
            case .followRequest: 0  // one per pending request
            case .followAccepted: nil  // one per accept (a new request is needed for another)
            case .reportResolved: Self.objectKey(n.reportId ?? "")
            }
        let grp = NotificationGroups.grp(type: n.type, post: post, createdAt: n.createdAt)
        try Relations.lockPair(recipient, actor, shared: true, in: tx)
        // The dedup key, in the insert itself: the merged table by NOT EXISTS, the recent table
        // by its unique index. (The casts type the parameters that may be NULL for PostgreSQL.)
        // An undone notification's row is gone, so doing the action again notifies again: one
        // notification while the action stands (API.md), its push stopped by `push_suppressed`.
        // Nothing between a blocked pair, and nothing from someone the recipient mutes (API.md
        // "Privacy and safety"): checked in the same statement, so an action that raced a block
        // or a mute made before it commits notifies nobody. Nothing to or from a suspended,
        // deleted or erased account either (`AccountStates`; the pair lock above took both
        // accounts' locks, so a state change waits for this insert or this insert sees it).
        guard
            let row = try Self.byKey(
                tx.connection,
                {
                    try Self.seqConflictsRetried(
                        tx.connection.queryOne(
                            """
                            INSERT INTO recent_notifications(recipient, seq, type, actor, post, once, detail, created_at, grp)
                            SELECT \(recipient), \(Self.nextSeq("\(recipient)")), \(n.type.rawValue), \(actor),
                                CAST(\(post) AS BIGINT), CAST(\(once) AS BIGINT),
                                CAST(\(n.detail) AS TEXT), \(n.createdAt), CAST(\(grp) AS BIGINT)
                            WHERE NOT EXISTS (SELECT 1 FROM notifications WHERE recipient = \(recipient) AND actor = \(actor)
                                AND type = \(n.type.rawValue) AND once = \(once))
                                AND NOT EXISTS (SELECT 1 FROM blocks WHERE blocker = \(recipient) AND blocked = \(actor))
                                AND NOT EXISTS (SELECT 1 FROM blocks WHERE blocker = \(actor) AND blocked = \(recipient))
                                AND NOT EXISTS (SELECT 1 FROM mutes WHERE muter = \(recipient) AND muted = \(actor))
                                AND NOT EXISTS (SELECT 1 FROM account_states s WHERE s.user_key IN (\(recipient), \(actor))
                                    AND s.state <> 0)
                            ON CONFLICT (recipient, actor, type, once) WHERE once IS NOT NULL DO NOTHING RETURNING seq
                            """))
                })
        else { return nil }
        // The row's group (if `grp` is set) moved in the same statement: the trigger of
        // `NotificationGroupSchema.onInsertMigration`.
        let seq = try row.int64("seq")
        let followState: FollowState? =
            [.follow, .followRequest, .followAccepted].contains(n.type)
            ? try Relations.state(recipient, toward: actor, on: tx.connection) : nil
        let ids = try NotificationIds.load(on: tx.connection)
        let stored = Notifications.Notification(
            id: ids.id(recipient: recipient, seq: seq), seq: seq, type: n.type.kind, detail: n.detail,
            createdAt: Timestamp.format(ms: n.createdAt), read: false, actorId: n.actorId, post: n.post,
            followState: followState)
        let delivery = self.delivery
        var carried = stored
        // What the event carried, else this service's replica (a follow carries none).
        carried.actor =
            n.actor?.id == n.actorId ? n.actor : try ActorProfiles.user(actor, id: n.actorId, on: tx.connection)
        let live = carried
        tx.onCommit { delivery.publish(live, to: [(recipient, seq)], ids: ids) }
        try queuePush(stored, type: n.type, recipient: recipient, actor: actor, once: once, in: tx)
        return stored
    }

    /// One batch of a new post's fan-out: a `post` notification for each of `owner`'s
    /// `notifyPosts` followers after follower key `after`, at most `limit`, in follower-key order,
    /// each with its recipient's next seq, in one set-based statement in `tx`; delivered after
    /// the commit.
    /// - Parameter skipNotified: skip followers who already have a notification about the post
    ///   (a job carried over from the old schema).
    /// - Returns: how many followers the batch covered and the last one's key (nil: none left).
    /// - Throws: the engine's error.
    ///
    /// Nobody is notified while the owner is hidden (suspended, deleting, erased: `AccountStates`),
    /// and no follower who is (both checked in the insert): the batch still covers its followers.
    func fanOut(_ job: FanOutJob, after: Int64, limit: Int, in tx: Transaction) throws -> (count: Int, last: Int64?) {
        let c = tx.connection
        try Relations.lockFanOut(of: job.owner, shared: true, in: tx)
        // The batch's followers, then one INSERT … SELECT over exactly that range.
        guard
            let range = try c.queryOne(
                """
                SELECT COUNT(*) AS n, MAX(follower) AS last FROM (
                    SELECT follower FROM edges WHERE followee = \(job.owner) AND notify_posts = 1 AND follower > \(after)
                    ORDER BY follower LIMIT \(limit)) AS batch
                """),
            let last = try range.optionalInt64("last")
        else { return (0, nil) }
        let count = try range.int("n")
        let skip: SQL =
            job.skipNotified
            ? "AND NOT EXISTS (SELECT 1 FROM all_notifications x WHERE x.post = \(job.post) AND x.recipient = e.follower)" : ""
        let recipients: [(key: Int64, seq: Int64)] = try Self.byKey(c) {
            try Self.seqConflictsRetried(
                c.integerPairs(
                    """
                    INSERT INTO recent_notifications(recipient, seq, type, actor, post, once, detail, created_at)
                    SELECT e.follower, \(Self.head("e.follower")) + 1, \(literal: NotificationType.post.rawValue), \(job.owner),
                        \(job.post),
                        NULL, NULL, \(job.createdAt)
                    FROM edges e WHERE e.followee = \(job.owner) AND e.notify_posts = 1 AND e.follower > \(after)
                        AND e.follower <= \(last) \(skip)
                        AND NOT EXISTS (SELECT 1 FROM mutes m WHERE m.muter = e.follower AND m.muted = \(job.owner))
                        AND \(AccountStates.active("e.follower")) AND \(AccountStates.active("\(job.owner)"))
                    ORDER BY e.follower
                    RETURNING recipient, seq
                    """
                )
            )
        }.map { (key: $0.0, seq: $0.1) }
        if !recipients.isEmpty {
            let template = Notifications.Notification(
                id: "", seq: 0, type: NotificationType.post.kind, detail: nil, createdAt: Timestamp.format(ms: job.createdAt),
                read: false, actorId: job.ownerId, post: .init(id: job.postId, thumbnailURL: job.thumbnailURL),
                followState: nil,
                actor: try job.ownerUser ?? ActorProfiles.user(job.owner, id: job.ownerId, on: c))
            let delivery = self.delivery
            let batch = recipients
            let ids = try NotificationIds.load(on: c)
            tx.onCommit { delivery.publish(template, to: batch, ids: ids) }
            if let push, try PushQueueStore.anyDevices(on: c) {
                let text = NotificationText.render(
                    type: .post, actorUsername: try PushQueueStore.username(job.owner, on: c) ?? "Someone", detail: nil)
                if try PushQueueStore.enqueueFanOut(
                    post: job.post, after: after, last: last, text: text, now: push.clock(),
                    environments: push.environments, in: tx) > 0
                {
                    push.wakeOnCommit(tx)
                }
            }
        }
        return (count, last)
    }

    /// Queues the pushes of `stored` (one per device of the recipient, unless they turned this
    /// type off) in `tx`, when push is on and the recipient has a device, and the same
    /// notification (recipient, actor, type and dedup key `once`) was not made and undone
    /// before: a redo is listed and streamed again but never pushed a second time (API.md).
    /// - Throws: the engine's error.
    private func queuePush(
        _ stored: Notifications.Notification, type: NotificationType, recipient: Int64, actor: Int64, once: Int64?,
        in tx: Transaction
    ) throws {
        let c = tx.connection
        guard let push, try c.exists("SELECT 1 FROM devices WHERE user_key = \(recipient) LIMIT 1") else { return }
        if let once,
            try c.exists(
                """
                SELECT 1 FROM push_suppressed WHERE recipient = \(recipient) AND actor = \(actor) AND type = \(type.rawValue)
                    AND once = \(once)
                """
            )
        {
            return
        }
        let text = NotificationText.render(
            type: type.kind, actorUsername: try PushQueueStore.username(actor, on: c) ?? "Someone", detail: stored.detail)
        if try PushQueueStore.enqueue(
            recipient: recipient, seq: stored.seq, type: type, text: text, collapseID: PushQueue.collapseID(for: stored),
            now: push.clock(), environments: push.environments, in: tx) > 0
        {
            push.wakeOnCommit(tx)
        }
    }

    /// Deletes up to `limit` notifications about post `post` (from both tables, and those a
    /// suspension holds) through `NotificationRemoval` (groups, `head_floor`, badge), in `tx`.
    /// - Returns: how many were deleted.
    /// - Throws: the engine's error.
    static func delete(aboutPost post: Int64, limit: Int, in tx: Transaction) throws -> Int {
        let rows = try tx.query(
            """
            SELECT recipient, seq, type, grp, actor, once, 0 AS held FROM recent_notifications WHERE post = \(post)
            UNION ALL SELECT recipient, seq, type, grp, actor, once, 0 AS held FROM notifications WHERE post = \(post)
            UNION ALL SELECT recipient, seq, type, grp, actor, once, 1 AS held FROM held_notifications WHERE post = \(post)
            LIMIT \(limit)
            """)
        try NotificationRemoval.remove(try rows.map(RemovedRow.init), in: tx)
        return rows.count
    }

    /// Removes the `like` notification of `actorId` on post `postId` to `recipientId`, if any
    /// (`NotificationRemoval`), in `tx`: an unlike leaves no trace in the list, the groups or the
    /// badge; liking again notifies again, without a second push (API.md's undo/redo rule).
    /// - Throws: the engine's error.
    static func removeLike(recipientId: String, actorId: String, postId: String, in tx: Transaction) throws {
        let c = tx.connection
        guard let recipient = try Keys.existingUser(recipientId, on: c), let actor = try Keys.existingUser(actorId, on: c),
            let post = try Keys.existingPost(postId, on: c)
        else { return }
        try NotificationRemoval.remove(
            try NotificationRemoval.rows(
                where:
                    """
                    recipient = \(recipient) AND actor = \(actor) AND type = \(NotificationType.like.rawValue)
                        AND once = \(post)
                    """,
                on: c),
            suppressRepeat: true, in: tx)
    }

    /// A 63-bit key for an object id that has no row of its own (a comment): FNV-1a 64 of its
    /// UTF-8 bytes, top bit cleared. Ids are 128 random bits, so a collision (which would only
    /// suppress a second notification of the same actor to the same recipient) is negligible.
    static func objectKey(_ id: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash & 0x7fff_ffff_ffff_ffff)
    }

    /// A notification's id: its recipient's key and its seq (unique, stable).
}

/// Reads of a recipient's notifications and their read mark.
protocol NotificationStore: Sendable {
    /// A page of the recipient's notifications, newest first, with the unread count.
    /// - Throws: 400 `invalid_cursor`.
    func list(recipientId: String, page: PageRequest) async throws -> Notifications.ListNotifications.Reply

    /// Everything after `afterSeq`, oldest first, at most `limit` (1...1,000), and the head.
    func since(recipientId: String, afterSeq: Int64, limit: Int) async throws -> Notifications.NotificationsSince.Reply

    /// Moves the read mark up to `upToSeq`, or to the head when nil (never back, never past the
    /// head). - Returns: the unread count afterwards.
    func markRead(recipientId: String, upToSeq: Int64?) async throws -> Int

    /// The unread count (the badge): head − read mark − removed while unread, from counters.
    func unreadCount(recipientId: String) async throws -> Int

    /// A page of the recipient's notification groups, newest activity first, with the unread
    /// count (`NotificationGroupPage`). - Throws: 400 `invalid_cursor`.
    func groups(recipientId: String, page: PageRequest) async throws -> Notifications.ListGroups.Reply

    /// The recipient's key (added to the replica as a nameless row when new) and head seq.
    func streamStart(recipientId: String) async throws -> Notifications.StreamStart.Reply

    /// The head seq of each key (0 for none), in order.
    func heads(recipientKeys: [Int64]) async throws -> [Int64]
}

/// `NotificationStore` on a SQL `Database`, either engine.
struct SQLNotificationStore: NotificationStore {
    let database: Database

    /// Rows of both notification tables with what a `Notifications.Notification` needs: the actor's and
    /// post's ids, and for a follow whether the recipient follows the actor (its follow state now).
    static let select: SQL = """
        SELECT n.recipient, n.seq, n.type, n.detail, n.created_at, a.id AS actor_id, p.id AS post_id,
            p.thumbnail_url, CASE WHEN n.type IN (\(literal: NotificationType.follow.rawValue),
                \(literal: NotificationType.followRequest.rawValue), \(literal: NotificationType.followAccepted.rawValue))
                THEN EXISTS(SELECT 1 FROM edges e WHERE e.follower = n.recipient AND e.followee = n.actor) END AS follows_actor
        FROM all_notifications n JOIN identities a ON a.key = n.actor LEFT JOIN posts p ON p.key = n.post
        """

    /// The head seq of `recipient`: its newest row, or the floor deletions left (0 when none).
    static func head(_ recipient: Int64, on c: DatabaseConnection) throws -> Int64 {
        try c.scalar("SELECT \(NotificationWriter.head("\(recipient)"))") ?? 0
    }

    static func readSeq(_ recipient: Int64, on c: DatabaseConnection) throws -> Int64 {
        try c.scalar("SELECT read_seq FROM recipients WHERE recipient = \(recipient)") ?? 0
    }

    /// The recipient's unread count from stored numbers, never a scan: every seq up to the head
    /// was handed out once, so it is head − read mark − the notifications removed while unread
    /// (`recipients.removed_unread`, kept by `NotificationRemoval` and `markRead`), at least 0.
    static func unreadCount(_ recipient: Int64, on c: DatabaseConnection) throws -> Int {
        let head = try head(recipient, on: c)
        let row = try c.queryOne("SELECT read_seq, removed_unread FROM recipients WHERE recipient = \(recipient)")
        return unread(head: head, readSeq: try row?.int64("read_seq") ?? 0, removed: try row?.int64("removed_unread") ?? 0)
    }

    /// The unread count from the three stored numbers (see `unreadCount(_:on:)`), at least 0.
    static func unread(head: Int64, readSeq: Int64, removed: Int64) -> Int {
        Int(max(head - readSeq - removed, 0))
    }

    /// Decodes rows selected with `select`.
    static func decode(_ rows: some Sequence<Row>, readSeq: Int64, ids: NotificationIds) throws
        -> [Notifications.Notification]
    {
        try rows.map { r in
            let seq = try r.int64("seq")
            let type = NotificationType(rawValue: try r.int64("type")) ?? .post
            let post = try r.optionalString("post_id").map {
                Notifications.Notification.PostRef(id: $0, thumbnailURL: try r.optionalString("thumbnail_url") ?? "")
            }
            return Notifications.Notification(
                id: ids.id(recipient: try r.int64("recipient"), seq: seq), seq: seq, type: type.kind,
                detail: try r.optionalString("detail"), createdAt: Timestamp.format(ms: try r.int64("created_at")),
                read: seq <= readSeq, actorId: try r.string("actor_id"), post: post,
                followState: [.follow, .followRequest, .followAccepted].contains(type)
                    ? (try r.bool("follows_actor") ? .following : .notFollowing) : nil)
        }
    }

    func list(recipientId: String, page: PageRequest) async throws -> Notifications.ListNotifications.Reply {
        let before = try database.pageCursors.decode(page.cursor, list: "notifications", owner: recipientId) ?? Int64.max
        let limit = page.clampedLimit
        return try await database.read { c in
            try c.snapshot {
                guard let recipient = try Keys.existingUser(recipientId, on: c) else {
                    return .init(items: [], nextCursor: nil, unreadCount: 0)
                }
                let read = try Self.readSeq(recipient, on: c)
                let rows = try c.query(
                    "\(Self.select) WHERE n.recipient = \(recipient) AND n.seq < \(before) ORDER BY n.seq DESC LIMIT \(limit + 1)"
                )
                let items = try Self.decode(rows.prefix(limit), readSeq: read, ids: try NotificationIds.load(on: c))
                return .init(
                    items: items,
                    nextCursor: rows.count > limit
                        ? items.last.map { database.pageCursors.encode(list: "notifications", owner: recipientId, key: $0.seq) }
                        : nil,
                    unreadCount: try Self.unreadCount(recipient, on: c))
            }
        }
    }

    func since(recipientId: String, afterSeq: Int64, limit: Int) async throws -> Notifications.NotificationsSince.Reply {
        try await database.read { c in
            try c.snapshot {
                guard let recipient = try Keys.existingUser(recipientId, on: c) else { return .init(items: [], headSeq: 0) }
                let rows = try c.query(
                    """
                    \(Self.select) WHERE n.recipient = \(recipient) AND n.seq > \(afterSeq) ORDER BY n.seq
                        LIMIT \(min(max(limit, 1), 1_000))
                    """
                )
                return .init(
                    items: try Self.decode(
                        rows, readSeq: try Self.readSeq(recipient, on: c), ids: try NotificationIds.load(on: c)),
                    headSeq: try Self.head(recipient, on: c))
            }
        }
    }

    func markRead(recipientId: String, upToSeq: Int64?) async throws -> Int {
        try await database.write { tx in
            let c = tx.connection
            guard let recipient = try Keys.existingUser(recipientId, on: c) else { return 0 }
            // An erased account keeps no read mark (its erasure may be under way: its lock first).
            try Relations.lockAccounts([recipient], shared: true, in: tx)
            if try AccountStates.state(recipient, on: c) == .erased { return 0 }
            let head = try Self.head(recipient, on: c)
            let old = try Self.readSeq(recipient, on: c)
            let mark = max(old, min(upToSeq ?? head, head))
            guard mark > old else { return try Self.unreadCount(recipient, on: c) }
            // Tombstones at or below the new mark are read now: they leave the counter.
            try tx.query("DELETE FROM removed_unread WHERE recipient = \(recipient) AND seq > \(old) AND seq <= \(mark)")
            let forgotten = c.changes
            try tx.query(
                """
                INSERT INTO recipients(recipient, read_seq) VALUES (\(recipient), \(mark))
                ON CONFLICT(recipient) DO UPDATE SET read_seq = excluded.read_seq,
                    removed_unread = recipients.removed_unread - \(forgotten)
                """)
            return try Self.unreadCount(recipient, on: c)
        }
    }

    func unreadCount(recipientId: String) async throws -> Int {
        try await database.read { c in
            try c.snapshot {
                guard let recipient = try Keys.existingUser(recipientId, on: c) else { return 0 }
                return try Self.unreadCount(recipient, on: c)
            }
        }
    }

    func groups(recipientId: String, page: PageRequest) async throws -> Notifications.ListGroups.Reply {
        try await NotificationGroupPage.read(recipientId: recipientId, page: page, on: database)
    }

    func streamStart(recipientId: String) async throws -> Notifications.StreamStart.Reply {
        if let known = try await database.read({ c -> Notifications.StreamStart.Reply? in
            try c.snapshot {
                guard let key = try Keys.existingUser(recipientId, on: c) else { return nil }
                return .init(recipientKey: key, headSeq: try Self.head(key, on: c))
            }
        }) {
            return known
        }
        return try await database.write { tx in
            let key = try Keys.user(recipientId, in: tx)
            return .init(recipientKey: key, headSeq: try Self.head(key, on: tx.connection))
        }
    }

    func heads(recipientKeys: [Int64]) async throws -> [Int64] {
        try await database.read { c in
            try c.snapshot { try recipientKeys.map { try Self.head($0, on: c) } }
        }
    }
}
