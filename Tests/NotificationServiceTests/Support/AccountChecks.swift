import Foundation
import Harness
import Messages
import Storage
import Testing

@testable import NotificationService

/// What the account lifecycle tests read back from the service's database: every row that
/// refers to a user, every row that does not, and whether what is kept on write (follow counts,
/// groups, badges) agrees with the rows.
enum AccountChecks {
    /// Each table of NotificationService with the condition under which one of its rows refers to
    /// the user whose key is bound (`?` stands for it; each table lists every column a user key
    /// lives in).
    static let references: [(table: String, condition: @Sendable (Int64) -> SQL)] = [
        ("edges", { "follower = \($0) OR followee = \($0)" }),
        ("follow_counts", { "\"user\" = \($0)" }),
        ("follow_requests", { "requester = \($0) OR target = \($0)" }),
        ("blocks", { "blocker = \($0) OR blocked = \($0)" }),
        ("mutes", { "muter = \($0) OR muted = \($0)" }),
        ("private_accounts", { "\"user\" = \($0)" }),
        ("recent_notifications", { "recipient = \($0) OR actor = \($0)" }),
        ("notifications", { "recipient = \($0) OR actor = \($0)" }),
        ("held_notifications", { "recipient = \($0) OR actor = \($0)" }),
        ("notification_groups", { "recipient = \($0) OR actor1 = \($0) OR actor2 = \($0) OR actor3 = \($0)" }),
        ("held_groups", { "recipient = \($0) OR actor = \($0)" }),
        ("removed_unread", { "recipient = \($0)" }),
        ("recipients", { "recipient = \($0)" }),
        ("push_suppressed", { "recipient = \($0) OR actor = \($0)" }),
        // A queued push refers to its notification's actor too: it goes with the notification.
        (
            "push_queue",
            {
                """
                recipient = \($0) OR EXISTS (SELECT 1 FROM all_notifications n
                    WHERE n.recipient = push_queue.recipient AND n.seq = push_queue.seq AND n.actor = \($0))
                """
            }
        ),
        ("devices", { "user_key = \($0)" }),
        ("device_sessions", { "user_key = \($0)" }),
        ("device_moves", { "user_key = \($0)" }),
        ("push_preferences", { "user_key = \($0)" }),
        ("actor_profiles", { "actor = \($0)" }),
        ("posts", { "owner = \($0)" }),
        ("fanout_jobs", { "owner = \($0)" }),
        ("account_jobs", { "user_key = \($0)" }),
    ]

    /// The tables with rows that refer to user `key`, with their counts (empty: nothing of the
    /// user is left), including a username in `identities` and queued pushes that announce a
    /// notification no longer stored (a push of a removed notification).
    static func rows(referringTo key: Int64, in database: Database) async throws -> [String: Int64] {
        try await database.read { c in
            var found: [String: Int64] = [:]
            for (table, condition) in references {
                let n = try c.scalar("SELECT COUNT(*) FROM \(unescaped: table) WHERE \(condition(key))") ?? 0
                if n > 0 { found[table] = n }
            }
            if let n = try c.scalar("SELECT COUNT(*) FROM identities WHERE key = \(key) AND username IS NOT NULL"), n > 0 {
                found["identities.username"] = n
            }
            let orphans =
                try c.scalar(
                    """
                    SELECT COUNT(*) FROM push_queue q WHERE NOT EXISTS (SELECT 1 FROM all_notifications n
                        WHERE n.recipient = q.recipient AND n.seq = q.seq)
                    """) ?? 0
            if orphans > 0 { found["push_queue without its notification"] = orphans }
            return found
        }
    }

    /// Every row of `table` that does not refer to user `key` (all columns, as text), sorted.
    static func rows(of table: String, notReferringTo key: Int64, in database: Database) async throws -> [String] {
        let condition = references.first { $0.table == table }?.condition(key) ?? "false"
        return try await database.read { c in
            try c.query("SELECT * FROM \(unescaped: table) WHERE NOT (\(condition))").map { row in
                zip(row.columns.names, row.values).map { "\($0)=\($1)" }.joined(separator: " ")
            }.sorted()
        }
    }

    /// Users whose `follow_counts` differ from their edges (0: every counter equals its edges).
    static func countMismatches(in database: Database) async throws -> Int64 {
        try await database.read { c in
            try c.scalar(
                """
                SELECT COUNT(*) FROM (
                    SELECT u.k FROM (SELECT follower AS k FROM edges UNION SELECT followee FROM edges
                        UNION SELECT "user" FROM follow_counts) u
                    LEFT JOIN follow_counts c ON c."user" = u.k
                    WHERE COALESCE(c.followers, 0) <> (SELECT COUNT(*) FROM edges e WHERE e.followee = u.k)
                        OR COALESCE(c.following, 0) <> (SELECT COUNT(*) FROM edges e WHERE e.follower = u.k)) m
                """) ?? 0
        }
    }

    /// `user`'s follower and following counts from `follow_counts` (0, 0 without a row).
    static func counts(_ key: Int64, in database: Database) async throws -> (followers: Int64, following: Int64) {
        try await database.read { c in
            let row = try c.queryOne("SELECT followers, following FROM follow_counts WHERE \"user\" = \(key)")
            return (try row?.int64("followers") ?? 0, try row?.int64("following") ?? 0)
        }
    }

    /// Every notification of `user` as the API lists it (all pages), its groups (all pages) and
    /// its unread count: what `expectConsistent` compares, and what a hold and its restore must
    /// leave as it was.
    struct View: Equatable {
        var flat: [Notifications.Notification]
        var groups: [Notifications.Group]
        var unread: Int
    }

    static func view(_ user: Identity, in service: InProcessService) async throws -> View {
        let store = SQLNotificationStore(database: service.database)
        var groups: [Notifications.Group] = []
        var cursor: String? = nil
        repeat {
            let page = try await store.groups(recipientId: user.id, page: .init(limit: 7, cursor: cursor))
            groups += page.items
            cursor = page.nextCursor
        } while cursor != nil
        var flat = try await service.allNotifications(user, pageSize: 7)
        for i in flat.indices { flat[i].actor = nil }  // live messages only
        return View(flat: flat, groups: groups, unread: try await store.unreadCount(recipientId: user.id))
    }

    /// `user`'s flat list, groups and badge agree: each group's count is its members in the flat
    /// list, its actors the 3 newest distinct ones, its latest seq the newest member's; the badge
    /// is the flat list's unread rows, the same in all three answers.
    static func expectConsistent(
        _ user: Identity, in service: InProcessService, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let view = try await view(user, in: service)
        var members: [String: [Notifications.Notification]] = [:]
        for n in view.flat { members[NotificationGroupKey.of(n), default: []].append(n) }
        #expect(Set(view.groups.map(\.key)) == Set(members.keys), "\(user.username)", sourceLocation: sourceLocation)
        #expect(view.groups.count == members.count, "\(user.username): a group repeated", sourceLocation: sourceLocation)
        for g in view.groups {
            let m = members[g.key] ?? []
            var actors: [String] = []
            for n in m where !actors.contains(n.actorId) && actors.count < 3 { actors.append(n.actorId) }
            #expect(g.count == m.count, "\(user.username) \(g.key)", sourceLocation: sourceLocation)
            #expect(g.actorIds == actors, "\(user.username) \(g.key)", sourceLocation: sourceLocation)
            #expect(g.latestSeq == m.first?.seq, "\(user.username) \(g.key)", sourceLocation: sourceLocation)
        }
        let unread = view.flat.filter { !$0.read }.count
        #expect(view.unread == unread, "\(user.username) badge", sourceLocation: sourceLocation)
        let page = try await service.notifications(user, limit: 1)
        #expect(page.unreadCount == unread, "\(user.username) list badge", sourceLocation: sourceLocation)
    }

    /// Every recipient's recent rows are newer than its merged ones (what `RecentMerger` keeps and
    /// `Retention.seqRange` relies on). - Returns: the recipients where not.
    static func recentNotNewer(in database: Database) async throws -> Int64 {
        try await database.read { c in
            try c.scalar(
                """
                SELECT COUNT(*) FROM (SELECT r.recipient FROM recent_notifications r
                    WHERE r.seq < (SELECT MAX(n.seq) FROM notifications n WHERE n.recipient = r.recipient)) x
                """) ?? 0
        }
    }
}
