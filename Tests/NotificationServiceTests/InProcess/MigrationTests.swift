import BackendKit
import Foundation
import Harness
import Messages
import Storage
import TestSupport
import Testing
import Wire

@testable import NotificationService

/// A database written before the redesign (the legacy migrations counted by `user_version`,
/// usernames in `users`, texts in `notifications.text`) opened with today's migrations.
@Suite(.enabled(if: TestStorage.engine == .sqlite, "upgrades SQLite files from older builds"))
struct MigrationTests {
    /// Builds a database as the pre-redesign service left it: its outbox tables, the legacy
    /// migrations applied and counted in `user_version`, and `rows` inserted.
    static func legacyDatabase(_ rows: [String]) throws -> String {
        let directory = makeTemporaryDirectory("notification-legacy")
        let c = try SQLiteConnection(path: "\(directory)/notification.sqlite")
        try c.execute(
            """
            CREATE TABLE IF NOT EXISTS outbox(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, time TEXT NOT NULL, body TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS event_cursor(producer TEXT PRIMARY KEY, seq INTEGER NOT NULL);
            """)
        for migration in NotificationSchema.legacy { try c.execute(SQL(unescaped: migration.sqlite ?? "")) }
        try c.execute("PRAGMA user_version = \(literal: NotificationSchema.legacy.count)")
        for row in rows { try c.execute(SQL(unescaped: row)) }
        return directory
    }

    static func notification(_ seq: Int, _ type: String, _ text: String, actor: String, object: String, post: String?)
        -> String
    {
        let postValues = post.map { "'\($0)', 'https://img.example/\($0).jpg'" } ?? "NULL, NULL"
        let quoted = text.replacingOccurrences(of: "'", with: "''")
        return """
            INSERT INTO notifications(recipient_id, seq, type, text, created_at, actor_id, object_id, post_id, thumbnail_url)
            VALUES ('u-owner', \(seq), '\(type)', '\(quoted)', '2026-11-30T12:00:00.000Z', '\(actor)', '\(object)',
                \(postValues))
            """
    }

    @Test func storedTextsBecomeDetails() async throws {
        let old: [(type: String, text: String, actor: String, object: String, post: String?, detail: String?)] = [
            ("follow", "alice started following you.", "u-alice", "u-owner", nil, nil),
            ("like", "alice liked your photo.", "u-alice", "p1", "p1", "photo"),
            ("like", "bob liked your video.", "u-bob", "v1", "v1", "video"),
            ("like", "someone liked your video.", "u-gone", "v2", "v2", "video"),
            ("comment", "alice commented: nice!", "u-alice", "c1", "p1", "nice!"),
            ("comment", "bob commented: I commented: twice, it's true", "u-bob", "c2", "p1", "I commented: twice, it's true"),
            ("comment", "commented commented: liked your video.", "u-commented", "c3", "p1", "liked your video."),
            ("comment", "alice commented: two\nlines", "u-alice", "c4", "p1", "two\nlines"),
            ("comment", "alice commented: ", "u-alice", "c5", "p1", ""),
            ("tag", "bob tagged you in a post.", "u-bob", "p9", "p9", nil),
            ("post", "bob shared a new post.", "u-bob", "p9", "p9", nil),
        ]
        var rows = old.enumerated().map { i, n in
            Self.notification(i + 1, n.type, n.text, actor: n.actor, object: n.object, post: n.post)
        }
        rows.append("INSERT INTO recipients(recipient_id, head_seq, read_seq) VALUES ('u-owner', \(old.count), 2)")
        rows.append(
            """
            INSERT INTO users(id, username, version) VALUES ('u-alice', 'alice', 1), ('u-bob', 'bob', 3),
                ('u-commented', 'commented', 1)
            """
        )
        let directory = try Self.legacyDatabase(rows)
        let database = try TestDatabase.open(in: directory)

        let store = SQLNotificationStore(database: database)
        let list = try await store.list(recipientId: "u-owner", page: .init(limit: 100))
        #expect(list.items.map(\.seq) == (1...old.count).reversed().map { Int64($0) })
        #expect(list.items.reversed().map(\.detail) == old.map(\.detail))
        #expect(list.items.reversed().map(\.type.wire) == old.map(\.type))
        #expect(list.unreadCount == old.count - 2)
        // Rendered with the same usernames, the texts are what was stored.
        let names = ["u-alice": "alice", "u-bob": "bob", "u-gone": "someone", "u-commented": "commented"]
        #expect(
            list.items.reversed().map {
                NotificationText.render(type: $0.type, actorUsername: names[$0.actorId]!, detail: $0.detail)
            } == old.map(\.text))
        // Times, posts and follow states carried over; ids are opaque (NotificationIds) now.
        #expect(list.items.allSatisfy { $0.createdAt == "2026-11-30T12:00:00.000Z" })
        #expect(list.items.last?.followState == .notFollowing && list.items.last?.post == nil)
        #expect(list.items.first?.post == .init(id: "p9", thumbnailURL: "https://img.example/p9.jpg"))
        #expect(Set(list.items.map(\.id)).count == old.count)
        // The service goes on where the old one stopped; the old like is not notified twice.
        let writer = NotificationWriter(delivery: .none)
        func like(_ actor: String) async throws -> Notifications.Notification? {
            try await database.write { tx in
                try writer.insert(
                    NewNotification(
                        recipientId: "u-owner", actorId: actor, type: .like, detail: "photo",
                        post: .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"), createdAt: Timestamp.nowMs()),
                    in: tx)
            }
        }
        #expect(try await like("u-alice") == nil)
        #expect(try await like("u-carol")?.seq == Int64(old.count + 1))
        let applied = try await database.read { c in
            try c.query("SELECT id FROM schema_migrations").map { try $0.string("id") }
        }
        #expect(Set(applied).isSuperset(of: NotificationSchema.migrations.map(\.id)))
    }

    @Test func theUsersTableBecomesTheIdentityReplica() async throws {
        let directory = try Self.legacyDatabase([
            "INSERT INTO users(id, username, version) VALUES ('u-alice', 'alice', 1), ('u-bob', 'bob', 3)",
            // Two rows with one name (the old service never wrote that): a name resolves to at
            // most one account, so neither keeps it.
            "INSERT INTO users(id, username, version) VALUES ('u-old', 'carol', 1), ('u-new', 'carol', 2)",
            """
            INSERT INTO follows(follower_id, followee_id, notify_posts, created_at)
            VALUES ('u-alice', 'u-bob', 1, '2026-11-30T12:00:00.000Z')
            """,
            "INSERT INTO follow_counts(user_id, followers, following) VALUES ('u-bob', 1, 0), ('u-alice', 0, 1)",
        ])
        let database = try TestDatabase.open(in: directory)
        let found = try await database.read { c in
            (
                alice: try IdentityReplica.identity(username: "alice", on: c),
                bob: try IdentityReplica.identity(id: "u-bob", on: c),
                carol: try IdentityReplica.identity(username: "carol", on: c),
                old: try IdentityReplica.identity(id: "u-old", on: c),
                usersTable: try c.exists("SELECT 1 FROM sqlite_master WHERE name = 'users'")
            )
        }
        #expect(found.alice?.id == "u-alice" && found.alice?.version == 1 && found.alice?.email == nil)
        #expect(found.bob?.username == "bob" && found.bob?.version == 3)
        #expect(found.carol == nil && found.old == nil)
        #expect(!found.usersTable)

        // The service built on it: the old edges and counters answer by the replicated names.
        let s = try await InProcessService()
        defer { s.stop() }
        let app = NotificationApp(database: database, auth: s.authClient, logger: InProcessService.logger)
        let header = try await app.graph.header(.init(viewerId: "u-alice", username: "bob"))
        #expect(header == .init(userId: "u-bob", followers: 1, following: 0, followState: .following))
        let edges = try await app.graph.listEdges(
            .init(viewerId: "u-bob", username: "BOB", following: false, page: .init()))
        #expect(edges.items == [.init(userId: "u-alice", followState: .notFollowing)])
    }
    /// `notification.9-event-names`: a database whose outbox holds events under the service's
    /// old name (`graph.follow.changed`, `graph.follows.imported`) replays them under the new
    /// one; other rows are left as they were.
    @Test func outboxEventsFromBeforeTheRenameReplayUnderTheNewNames() async throws {
        let directory = makeTemporaryDirectory("notification-event-names")
        let before = (Outbox.migrations + NotificationSchema.migrations).filter { $0.id != "notification.9-event-names" }
        #expect(before.count == Outbox.migrations.count + NotificationSchema.migrations.count - 1)
        do {
            let c = try SQLiteConnection(path: "\(directory)/notification.sqlite")
            try Migrator.migrate(DatabaseConnection(c), before, legacy: NotificationSchema.legacy)
            try c.execute(
                """
                INSERT INTO outbox(type, time, body) VALUES
                    ('graph.follow.changed', 't1',
                     '{"followeeId":"u2","followerId":"u1","following":true,"notifyPosts":false}'),
                    ('graph.follows.imported', 't2', '{"followeeId":"u0","followerIds":["u1"],"notifyPosts":true}'),
                    ('graphical.other', 't3', '{}');
                """)
        }
        let database = try TestDatabase.open(in: directory)
        let events = try await database.outbox(after: 0, limit: 10).events
        #expect(events.map(\.type) == [Notifications.FollowChanged.type, Notifications.FollowsImported.type, "graphical.other"])
        let changed = try WireJSON.decode(EventEnvelope<Notifications.FollowChanged>.self, from: events[0].envelope)
        #expect(changed.type == "notification.follow.changed" && changed.seq == 1 && changed.producer == "notification")
        #expect(changed.body == .init(followerId: "u1", followeeId: "u2", following: true, notifyPosts: false))
        let imported = try WireJSON.decode(EventEnvelope<Notifications.FollowsImported>.self, from: events[1].envelope)
        #expect(imported.type == "notification.follows.imported")
        #expect(imported.body == .init(followeeId: "u0", followerIds: ["u1"], notifyPosts: true))
    }
}
