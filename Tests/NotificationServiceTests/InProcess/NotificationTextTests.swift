import Foundation
import Messages
import Testing
import Wire

@testable import NotificationService

/// Issue 11 point 9: notifications store what happened (`detail`), not a text with the actor's
/// name of the moment; `NotificationText.render` with the actor's current username gives the
/// API's texts, so a rename shows at once.
struct NotificationTextTests {
    @Test(
        arguments: [
            ("like", "photo", "alice liked your photo."),
            ("like", "video", "alice liked your video."),
            ("like", nil, "alice liked your photo."),
            ("follow", nil, "alice started following you."),
            ("comment", "nice!", "alice commented: nice!"),
            ("comment", "two\nlines", "alice commented: two\nlines"),
            ("tag", nil, "alice tagged you in a post."),
            ("post", nil, "alice shared a new post."),
        ] as [(String, String?, String)])
    func theAPITexts(type: String, detail: String?, text: String) {
        #expect(NotificationText.render(type: NotificationKind(wire: type), actorUsername: "alice", detail: detail) == text)
    }

    @Test func theTableHasNoTextColumn() async throws {
        let database = try TestDatabase.make()
        let columns = try await database.read { c in
            try c.query(
                .dialect(
                    sqlite: "SELECT name FROM pragma_table_info('notifications')",
                    postgres: "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'notifications'")
            ).map { try $0.string("name") }
        }
        #expect(columns.contains("detail"))
        #expect(!columns.contains("text"))
    }

    @Test func everyTypeStoresItsDetailAndRendersWithTheCurrentUsername() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let (alice, bob) = try await (s.user("alice"), s.user("bob"))
        try await s.follow(bob, "alice", notifyPosts: true)
        try await s.follow(alice, "bob")
        try await feed.like(alice, bob, post: "p1")
        try await feed.like(alice, bob, post: "v1", type: "video")
        try await feed.emit(
            Profile.PostCommented(
                postId: "p1", ownerId: bob.id, userId: alice.id, commentId: "c1", text: "nice!",
                thumbnailURL: "https://img.example/p1.jpg"))
        try await feed.emit(
            Profile.PostCreated(
                postId: "p2", ownerId: alice.id, thumbnailURL: "https://img.example/p2.jpg", taggedUserIds: [bob.id],
                createdAt: Timestamp.now()))

        /// Bob's notifications as the API shows them: texts from the actors' current usernames.
        func texts() async throws -> [String] {
            let notes = try await s.allNotifications(bob)
            let actors = try await s.app.replica.identities(ids: notes.map(\.actorId))
            return notes.map {
                NotificationText.render(type: $0.type, actorUsername: actors[$0.actorId]!.username, detail: $0.detail)
            }
        }
        let notes = try await s.allNotifications(bob)
        #expect(notes.map(\.type.wire) == ["post", "tag", "comment", "like", "like", "follow"])
        #expect(notes.map(\.detail) == [nil, nil, "nice!", "video", "photo", nil])
        #expect(
            try await texts() == [
                "alice shared a new post.", "alice tagged you in a post.", "alice commented: nice!",
                "alice liked your video.", "alice liked your photo.", "alice started following you.",
            ])

        // alice becomes alicia: every text says so, old and new alike.
        let replica = s.app.replica
        let renamed = Identity(id: alice.id, username: "alicia", email: alice.email, version: 2)
        _ = try await s.database.write { tx in try replica.apply(renamed, in: tx) }
        try await feed.emit(
            Profile.PostCommented(
                postId: "p1", ownerId: bob.id, userId: alice.id, commentId: "c2", text: "renamed",
                thumbnailURL: "https://img.example/p1.jpg"))
        #expect(
            try await texts() == [
                "alicia commented: renamed", "alicia shared a new post.", "alicia tagged you in a post.",
                "alicia commented: nice!", "alicia liked your video.", "alicia liked your photo.",
                "alicia started following you.",
            ])
        // What is published carries the same details (the shape has no text to go stale).
        let published = try await s.published().filter { $0.recipientId == bob.id }
        #expect(published.map(\.notification.detail) == notes.reversed().map(\.detail) + ["renamed"])
    }
}
