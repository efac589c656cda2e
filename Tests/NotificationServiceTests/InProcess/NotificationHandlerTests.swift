import Foundation
import Messages
import Testing

@testable import NotificationService

/// `NotificationHandlers` (with follows through `GraphHandlers` and likes through the profile
/// event handlers): lists, unread counts, read marks, the backlog, and the seeds' mock screen.
struct NotificationHandlerTests {
    @Test func aFollowNotifiesOnceAndShowsTheRelationAtReadTime() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let (alice, bob) = try await (s.user("alice"), s.user("bob"))
        try await s.follow(alice, "bob")
        var list = try await s.notifications(bob)
        #expect(list.unreadCount == 1)
        let note = try #require(list.items.first)
        #expect(note.type == .follow && note.actorId == alice.id && note.detail == nil && note.post == nil)
        #expect(note.seq == 1 && !note.read && note.followState == .notFollowing)
        #expect(
            NotificationText.render(type: note.type, actorUsername: "alice", detail: note.detail)
                == "alice started following you.")

        try await s.follow(bob, "alice")  // follow back
        list = try await s.notifications(bob)
        #expect(list.items.map(\.followState) == [.following])
        // Unfollow: the notification goes (no trace); follow again: exactly one, a new seq.
        try await s.unfollow(alice, "bob")
        list = try await s.notifications(bob)
        #expect(list.items.isEmpty && list.unreadCount == 0)
        try await s.follow(alice, "bob")
        try await s.follow(alice, "bob")  // idempotent: no second
        list = try await s.notifications(bob)
        #expect(list.items.map(\.seq) == [2] && list.unreadCount == 1)
        #expect(list.items.map(\.actorId) == [alice.id] && list.items.map(\.followState) == [.following])
        #expect(try await s.notifications(alice).items.map(\.actorId) == [bob.id])
        #expect(try await s.published().map(\.recipientId) == [bob.id, alice.id, bob.id])
    }

    /// The seeds' NotificationView mock data: 100 notifications alternating follow (even x)
    /// and like (odd x) from users email0…email99, the recipient following back x < 50.
    @Test func theSeedsMockScreenReadsBack() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let demo = try await s.user("demo")
        let actors = try await s.users((0..<100).map { "email\($0)" })
        let photo = "https://i.stack.imgur.com/GsDIl.jpg"
        for x in 0..<100 {
            if x % 2 == 0 {
                try await s.follow(actors[x], "demo")
            } else {
                try await feed.emit(
                    Profile.PostLiked(postId: "post \(x)", ownerId: demo.id, userId: actors[x].id, thumbnailURL: photo))
            }
        }
        for x in stride(from: 0, to: 50, by: 2) { try await s.follow(demo, "email\(x)") }

        let notes = try await s.allNotifications(demo, pageSize: 20)
        #expect(notes.count == 100)
        for (i, note) in notes.enumerated() {
            let x = 99 - i
            #expect(note.seq == Int64(x + 1))
            #expect(note.actorId == actors[x].id)
            #expect(!note.read)
            let text = NotificationText.render(type: note.type, actorUsername: actors[x].username, detail: note.detail)
            if x % 2 == 0 {
                #expect(note.type == .follow)
                #expect(text == "email\(x) started following you.")
                #expect(note.followState == (x < 50 ? .following : .notFollowing))
                #expect(note.post == nil)
            } else {
                #expect(note.type == .like)
                #expect(text == "email\(x) liked your photo.")
                #expect(note.post == .init(id: "post \(x)", thumbnailURL: photo))
                #expect(note.followState == nil)
            }
        }
        #expect(try await s.notifications(demo, limit: 1).unreadCount == 100)

        #expect(try await s.markRead(demo, upTo: 50) == 50)
        #expect(try await s.markRead(demo, upTo: 10) == 50)  // never back
        let page = try await s.notifications(demo, limit: 100)
        #expect(page.items.filter(\.read).map(\.seq) == (1...50).reversed().map { Int64($0) })
        let since = try await s.since(demo, after: 90)
        #expect(since.headSeq == 100)
        #expect(since.items.map(\.seq) == (91...100).map { Int64($0) })
        #expect(try await s.markRead(demo, upTo: 1_000) == 0)
        #expect(try await s.since(demo, after: 100).items.isEmpty)
    }
}
