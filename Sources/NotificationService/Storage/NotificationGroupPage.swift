import Messages
import Storage
import Wire

/// Reads a page of a recipient's notification groups (`notification.list_groups`) from what is
/// kept on write, never from the history: the multi-member groups from `notification_groups` by
/// (recipient, position DESC), the singles (`tag`, `post`) from the flat tables (their
/// `*_singles` indexes), merged by position
/// (a single's position is its seq) and cut at `limit` + 1. A page costs a few index ranges of
/// about `limit` rows whatever the number of notifications.
///
/// Paging while notifications arrive: the cursor carries the position of the last group
/// returned and H, the recipient's head seq when the first page was read. A later page takes a
/// group whose position is above H (it moved up after the first page) at its position as of
/// H: its largest member seq ≤ H (one seek on the grp index); a group with no member ≤ H
/// (created after the first page) is not in that pass. So within one pass no group is
/// repeated or skipped; each shows its current count and actors. One edge: if the member at a
/// moved group's old position is removed (an unlike) during the pass, its position as of H
/// falls, and a later page may show it again.
enum NotificationGroupPage {
    static let list = "notification-groups"

    /// One item of a page before it is decoded: its position and its row.
    private struct Candidate {
        var position: Int64
        var row: Row
        var single: Bool
    }

    /// The page after `page.cursor` of `recipientId`'s groups. - Throws: 400 `invalid_cursor`,
    /// or the engine's error.
    static func read(recipientId: String, page: PageRequest, on database: Database) async throws
        -> Notifications.ListGroups.Reply
    {
        let cursor = try database.pageCursors.decodeWithHead(page.cursor, list: list, owner: recipientId)
        let limit = page.clampedLimit
        return try await database.read { c in
            try c.snapshot {
                guard let recipient = try Keys.existingUser(recipientId, on: c) else {
                    return .init(items: [], nextCursor: nil, unreadCount: 0)
                }
                let head = try cursor?.head ?? SQLNotificationStore.head(recipient, on: c)
                // Positions strictly below `bound`: before the cursor and not after H.
                let bound = min(cursor?.key ?? Int64.max, head == Int64.max ? head : head + 1)
                var candidates: [Candidate] = []
                for r in try c.query(
                    """
                    \(groupSelect) WHERE g.recipient = \(recipient) AND g.position < \(bound) ORDER BY g.position DESC
                        LIMIT \(limit + 1)
                    """
                ) {
                    candidates.append(Candidate(position: try r.int64("position"), row: r, single: false))
                }
                if let cursor {
                    // Groups that moved above H since the first page, at their position as of H.
                    for r in try c.query("\(groupSelect) WHERE g.recipient = \(recipient) AND g.position > \(head)") {
                        guard
                            let asOf = try NotificationGroups.newest(
                                recipient: recipient, type: try r.int64("type"), grp: try r.int64("grp"), upTo: head,
                                limit: 1, on: c
                            ).first?.seq, asOf < cursor.key
                        else { continue }
                        candidates.append(Candidate(position: asOf, row: r, single: false))
                    }
                }
                // Both tables through their singles indexes (named: SQLite without statistics
                // would take the primary key's range, every notification of the recipient).
                for table: SQL in [
                    "notifications n \(SQL.indexedBy("notifications_singles"))",
                    "recent_notifications n \(SQL.indexedBy("recent_notifications_singles"))",
                ] {
                    for r in try c.query(
                        """
                        SELECT n.seq, n.type, n.created_at, n.detail, a.id AS actor_id, p.id AS post_id, p.thumbnail_url
                        FROM \(table) JOIN identities a ON a.key = n.actor LEFT JOIN posts p ON p.key = n.post
                        WHERE n.type IN (4, 5, 6, 7, 8) AND n.recipient = \(recipient) AND n.seq < \(bound)
                        ORDER BY n.seq DESC LIMIT \(limit + 1)
                        """)
                    {
                        candidates.append(Candidate(position: try r.int64("seq"), row: r, single: true))
                    }
                }
                candidates.sort { $0.position > $1.position }
                let shown = candidates.prefix(limit)
                let read = try SQLNotificationStore.readSeq(recipient, on: c)
                let ids = try NotificationIds.load(on: c)
                let items = try shown.map { try decode($0, recipient: recipient, readSeq: read, ids: ids) }
                return .init(
                    items: items,
                    nextCursor: candidates.count > limit
                        ? shown.last.map {
                            database.pageCursors.encode(list: list, owner: recipientId, key: $0.position, head: head)
                        }
                        : nil,
                    unreadCount: try SQLNotificationStore.unreadCount(recipient, on: c))
            }
        }
    }

    /// `notification_groups` rows with their actors' and post's ids and, for a group of one
    /// follow, whether the recipient follows the actor now.
    static let groupSelect: SQL = """
        SELECT g.type, g.grp, g.count, g.latest_seq, g.latest_at, g.position, g.detail, a1.id AS actor1,
            a2.id AS actor2, a3.id AS actor3, p.id AS post_id, p.thumbnail_url,
            CASE WHEN g.type = \(literal: NotificationType.follow.rawValue) AND g.count = 1 THEN EXISTS(
                SELECT 1 FROM edges e WHERE e.follower = g.recipient AND e.followee = g.actor1) END AS follows_actor
        FROM notification_groups g JOIN identities a1 ON a1.key = g.actor1
            LEFT JOIN identities a2 ON a2.key = g.actor2 LEFT JOIN identities a3 ON a3.key = g.actor3
            LEFT JOIN posts p ON g.type IN (\(literal: NotificationType.like.rawValue),
                \(literal: NotificationType.comment.rawValue))
                AND p.key = g.grp
        """

    private static func decode(_ item: Candidate, recipient: Int64, readSeq: Int64, ids: NotificationIds) throws
        -> Notifications.Group
    {
        let r = item.row
        let type = NotificationType(rawValue: try r.int64("type")) ?? .post
        let post = try r.optionalString("post_id").map {
            Notifications.Notification.PostRef(id: $0, thumbnailURL: try r.optionalString("thumbnail_url") ?? "")
        }
        if item.single {
            let seq = try r.int64("seq")
            return Notifications.Group(
                key: "\(type.kind.wire):\(ids.id(recipient: recipient, seq: seq))", type: type.kind, count: 1,
                actorIds: [try r.string("actor_id")], detail: try r.optionalString("detail"), post: post, followState: nil,
                latestSeq: seq,
                latestAt: Timestamp.format(ms: try r.int64("created_at")), read: seq <= readSeq)
        }
        let grp = try r.int64("grp")
        let key =
            switch type {
            case .follow: NotificationGroupKey.follow(day: grp)
            case .like, .comment, .tag, .post, .followRequest, .followAccepted, .reportResolved:
                "\(type.kind.wire):\(post?.id ?? String(grp))"
            }
        let count = try r.int("count")
        let latest = try r.int64("latest_seq")
        return Notifications.Group(
            key: key, type: type.kind, count: count,
            actorIds: try ["actor1", "actor2", "actor3"].compactMap { try r.optionalString($0) },
            detail: try r.optionalString("detail"), post: post,
            followState: type == .follow && count == 1 ? (try r.bool("follows_actor") ? .following : .notFollowing) : nil,
            latestSeq: latest, latestAt: Timestamp.format(ms: try r.int64("latest_at")), read: latest <= readSeq)
    }
}
