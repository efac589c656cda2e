import Foundation
import Harness
import Messages
import Storage
import TestSupport
import Testing

@testable import ProfileService

/// A database written before the redesign (`PRAGMA user_version` 1, identities and profile
/// fields together in `users`) opened by today's ProfileService, as `ServiceRunner` opens it.
/// Upgrades of SQLite databases written by older builds (PostgreSQL databases start from the
/// current schema: there is nothing older to upgrade there).
@Suite(.enabled(if: TestStorage.engine == .sqlite, "upgrades SQLite files from older builds"))
struct MigrationTests {
    /// The pre-redesign database: alice with every profile field and a setting; `d1` and `d2`
    /// sharing the username `dup` (d1 renamed at AuthService, its event not applied yet; d2 the
    /// name's new owner); a post of alice's tagging d1, liked and commented by d2; the outbox
    /// and the subscriber's cursor.
    static func writeLegacyDatabase(at path: String) throws {
        let c = try SQLiteConnection(path: path)
        try c.execute(SQL(unescaped: ProfileSchema.legacy[0].sqlite ?? ""))
        try c.execute(
            """
            CREATE TABLE outbox(
                seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, time TEXT NOT NULL, body TEXT NOT NULL);
            CREATE TABLE event_cursor(producer TEXT PRIMARY KEY, seq INTEGER NOT NULL);
            INSERT INTO outbox(type, time, body) VALUES ('profile.post.created', '2024-01-02T00:00:00Z', '{}');
            INSERT INTO event_cursor(producer, seq) VALUES ('auth', 7);
            INSERT INTO users(id, username, email, version, name, bio, photo_url, phone, gender, birth_date, join_date,
                save_original_posts)
            VALUES ('a1', 'alice', 'alice@example.com', 3, 'Alice', 'hi', 'https://x.example/a.jpg', '+1 555',
                'female', '1990-01-01', '2024-01-01T00:00:00Z', 1),
                ('d1', 'dup', 'd1@example.com', 1, 'Old Dup', '', NULL, NULL, NULL, NULL, '2024-01-01T00:00:00Z', 0),
                ('d2', 'dup', 'd2@example.com', 1, 'New Dup', '', NULL, NULL, NULL, NULL, '2024-01-01T00:00:00Z', 0);
            INSERT INTO posts(id, owner_id, post_type, media_url, thumbnail_url, caption, created_at, like_count,
                comment_count)
            VALUES ('p1', 'a1', 'photo', 'https://x.example/m.jpg', 'https://x.example/t.jpg', 'old', '2024-01-02T00:00:00Z',
                1, 1);
            INSERT INTO post_tags(post_seq, user_id, position) VALUES (1, 'd1', 0);
            INSERT INTO likes(post_seq, user_id) VALUES (1, 'd2');
            INSERT INTO comments(id, post_seq, user_id, text, created_at)
                VALUES ('c1', 1, 'd2', 'nice', '2024-01-02T00:00:00Z');
            PRAGMA user_version = 1;
            """)
    }

    @Test func aPreRedesignDatabaseKeepsEverythingAndItsSharedUsernameIsRefreshed() async throws {
        let f = try await ProfileFixture(prepare: Self.writeLegacyDatabase)
        // AuthService today: d1 was renamed (version 2), d2 has held `dup` since it registered.
        f.auth.put(Identity(id: "a1", username: "alice", email: "alice@example.com", version: 3))
        f.auth.put(Identity(id: "d1", username: "dup.old", email: "d1@example.com", version: 2))
        f.auth.put(Identity(id: "d2", username: "dup", email: "d2@example.com", version: 1))

        let alice = try await f.call(Profile.GetMe.self, .init(userId: "a1"))
        #expect(
            alice
                == Me(
                    id: "a1", username: "alice", name: "Alice", bio: "hi", profilePhotoURL: "https://x.example/a.jpg",
                    email: "alice@example.com", phone: "+1 555", gender: "female", birthDate: "1990-01-01",
                    joinDate: "2024-01-01T00:00:00Z"))
        #expect(try await f.call(Profile.GetSettings.self, .init(userId: "a1")).sections[0].items[2].action.value == true)
        #expect(f.auth.lookups.isEmpty, "a1 needed no lookup")

        // Neither row that shared `dup` keeps it; each is refreshed from AuthService when read,
        // the name's owner included (AuthService has the same version of it as the old row).
        let owner = try await f.app.profiles.header("dup")
        #expect(owner.user.id == "d2" && owner.user.name == "New Dup")
        let renamed = try await f.call(Profile.GetMe.self, .init(userId: "d1"))
        #expect(renamed.username == "dup.old" && renamed.name == "Old Dup")
        #expect(try await f.call(Profile.GetMe.self, .init(userId: "d2")).username == "dup")

        // Posts, tags, likes, comments and counters came through.
        let post = try await f.call(Profile.GetPost.self, .init(viewerId: "d2", postId: "p1"))
        #expect(post.owner.username == "alice" && post.taggedUsers.map(\.username) == ["dup.old"])
        #expect(post.likeCount == 1 && post.likedByMe && post.commentCount == 1)
        let comments = try await f.call(Profile.ListComments.self, .init(postId: "p1", page: .init()))
        #expect(comments.items.map(\.text) == ["nice"] && comments.items.map(\.author.username) == ["dup"])
        // The subscriber's cursor is kept and the outbox goes on after its last event.
        #expect(try await f.database.read { try $0.scalar("SELECT seq FROM event_cursor WHERE producer = 'auth'") } == 7)
        _ = try await f.call(Profile.SetLike.self, .init(userId: "a1", postId: "p1", liked: true))
        #expect(try await f.events().map(\.seq) == [1, 2])
    }
}
