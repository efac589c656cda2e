import Foundation
import Messages
import Testing
import Wire

@testable import NotificationService

/// ProfileService's events through a real `EventSubscriber` into `ProfileEventHandlers`:
/// likes, comments, tags and new posts make notifications (never for one's own actions),
/// deletions remove a post's notifications, repeats and replays make no duplicates.
struct ProfileEventTests {
    static let p1 = Notifications.Notification.PostRef(id: "p1", thumbnailURL: "https://img.example/p1.jpg")
    static let p2 = Notifications.Notification.PostRef(id: "p2", thumbnailURL: "https://img.example/p2.jpg")

    static func comment(_ id: String, by user: Identity, on owner: Identity, _ text: String) -> Profile.PostCommented {
        Profile.PostCommented(
            postId: "p1", ownerId: owner.id, userId: user.id, commentId: id, text: text, thumbnailURL: p1.thumbnailURL)
    }

    static func newPost(_ id: String, by owner: Identity, tagging tagged: [Identity] = []) -> Profile.PostCreated {
        Profile.PostCreated(
            postId: id, ownerId: owner.id, thumbnailURL: "https://img.example/\(id).jpg", taggedUserIds: tagged.map(\.id),
            createdAt: Timestamp.now())
    }

    @Test func likesCommentsTagsAndNewPostsMakeNotifications() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let ids = try await s.users(["owner", "liker", "tagged", "fan", "quietfan"])
        let (owner, liker, tagged, fan, quietFan) = (ids[0], ids[1], ids[2], ids[3], ids[4])
        try await s.follow(fan, "owner", notifyPosts: true)
        try await s.follow(quietFan, "owner")  // notifyPosts false: no post notification
        try await s.follow(owner, "fan")

        try await feed.like(liker, owner, post: "p1")
        try await feed.like(owner, owner, post: "p1")  // own like: nothing
        try await feed.emit(Profile.PostUnliked(postId: "p1", ownerId: owner.id, userId: liker.id))  // removed
        try await feed.like(liker, owner, post: "p1")  // liked again: a new one (seq 4)
        try await feed.like(liker, owner, post: "p1")  // a repeat of a like that stands: none
        try await feed.like(liker, owner, post: "v1", type: "video")
        try await feed.emit(Self.comment("c1", by: liker, on: owner, "nice!"))
        try await feed.emit(Self.comment("c2", by: liker, on: owner, "two\nlines"))
        try await feed.emit(Self.comment("c3", by: owner, on: owner, "thanks"))  // own comment: nothing
        try await feed.emit(Self.newPost("p2", by: owner, tagging: [tagged, owner, tagged]))

        let ownerNotes = try await s.allNotifications(owner)
        // The unliked like (seq 3) is gone; the like again is seq 4, once.
        #expect(ownerNotes.map(\.seq) == [7, 6, 5, 4, 2, 1])
        #expect(ownerNotes.map(\.type.wire) == ["comment", "comment", "like", "like", "follow", "follow"])
        #expect(ownerNotes.map(\.detail) == ["two\nlines", "nice!", "video", "photo", nil, nil])
        #expect(ownerNotes.map(\.actorId) == Array(repeating: liker.id, count: 4) + [quietFan.id, fan.id])
        #expect(ownerNotes.map(\.post?.id) == ["p1", "p1", "v1", "p1", nil, nil])
        #expect(ownerNotes[0].post?.id == Self.p1.id)
        #expect(ownerNotes.prefix(3).allSatisfy { $0.followState == nil && !$0.read })

        let fanNotes = try await s.allNotifications(fan)
        #expect(fanNotes.map(\.type.wire) == ["post", "follow"])
        #expect(fanNotes[0].post == Self.p2 && fanNotes[0].actorId == owner.id && fanNotes[0].detail == nil)
        #expect(try await s.allNotifications(quietFan).isEmpty)
        let taggedNotes = try await s.allNotifications(tagged)
        #expect(taggedNotes.map(\.type.wire) == ["tag"])  // once, though tagged twice
        #expect(taggedNotes.first?.post == Self.p2 && taggedNotes.first?.actorId == owner.id)
        // Nobody is notified of their own actions.
        for user in ids {
            #expect(try await s.allNotifications(user).allSatisfy { $0.actorId != user.id })
        }
    }

    @Test func deletingAPostRemovesItsNotifications() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let ids = try await s.users(["owner", "liker", "tagged", "fan"])
        let (owner, liker, tagged, fan) = (ids[0], ids[1], ids[2], ids[3])
        try await s.follow(fan, "owner", notifyPosts: true)
        try await s.follow(owner, "fan")
        try await feed.like(liker, owner, post: "p1")
        try await feed.emit(Self.comment("c1", by: liker, on: owner, "nice!"))
        try await feed.like(liker, owner, post: "p2")
        try await feed.emit(Self.newPost("p3", by: owner, tagging: [tagged]))
        #expect(try await s.allNotifications(owner).map(\.seq) == [4, 3, 2, 1])
        #expect(try await s.allNotifications(tagged).map(\.type.wire) == ["tag"])
        #expect(try await s.allNotifications(fan).map(\.type.wire) == ["post", "follow"])

        try await feed.emit(Profile.PostDeleted(postId: "p1", ownerId: owner.id))
        #expect(try await s.allNotifications(owner).map(\.post?.id) == ["p2", nil])
        #expect(try await s.notifications(owner).unreadCount == 2)
        try await feed.emit(Profile.PostDeleted(postId: "p3", ownerId: owner.id))
        #expect(try await s.allNotifications(fan).map(\.type.wire) == ["follow"])
        #expect(try await s.allNotifications(tagged).isEmpty)
        // Seqs are never reused.
        try await feed.like(fan, owner, post: "p2")
        #expect(try await s.allNotifications(owner).map(\.seq) == [5, 4, 1])
    }

    /// Events published in one transaction reach the subscriber together: applied in order,
    /// once each, a repeat in the same burst absorbed; an event sent twice, or every event
    /// replayed, changes nothing.
    @Test func burstsRepeatsAndReplaysMakeNoDuplicates() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let owner = try await s.user("owner")
        let fan = try await s.user("fan")
        let likers = try await s.users((1...40).map { "liker\($0)" })
        try await s.follow(fan, "owner", notifyPosts: true)
        try await feed.emit { tx in
            for (i, liker) in likers.enumerated() {
                try tx.emit(
                    Profile.PostLiked(
                        postId: "p1", ownerId: owner.id, userId: liker.id, thumbnailURL: "https://img.example/p1.jpg"))
                if i == 19 { try tx.emit(Self.newPost("p2", by: owner)) }
            }
            try tx.emit(
                Profile.PostLiked(
                    postId: "v1", ownerId: owner.id, userId: likers[0].id, thumbnailURL: "https://img.example/v1.jpg",
                    postType: "video"))
            try tx.emit(
                Profile.PostLiked(
                    postId: "p1", ownerId: owner.id, userId: likers[1].id, thumbnailURL: "https://img.example/p1.jpg"))
        }
        // The fan's follow (seq 1), 40 likes in order, the video like; the repeat absorbed.
        let notes = try await s.allNotifications(owner, pageSize: 100)
        #expect(notes.map(\.seq) == (1...42).reversed().map { Int64($0) })
        #expect(notes.first?.detail == "video" && notes.first?.actorId == likers[0].id)
        #expect(notes.dropFirst().prefix(40).map(\.actorId) == likers.reversed().map(\.id))
        #expect(notes.last?.type == .follow)
        #expect(try await s.allNotifications(fan).map(\.type.wire) == ["post"])

        // The same events sent again (ProfileService replaying after its own restart).
        try await feed.like(likers[5], owner, post: "p1")
        try await feed.emit(Self.newPost("p2", by: owner))
        #expect(try await s.notifications(owner).unreadCount == 42)
        #expect(try await s.since(fan, after: 0).headSeq == 1)

        // Every event delivered again from the start (a subscriber that lost its cursor).
        await feed.unsubscribe()
        let rewound = try await s.database.write { tx in
            try tx.query("UPDATE event_cursor SET seq = 0 WHERE producer = 'profile'")
            return tx.connection.changes
        }
        #expect(rewound == 1)
        await feed.resubscribe()
        try await feed.waitForApplied(through: feed.producer.database.currentHead())
        #expect(try await s.allNotifications(owner, pageSize: 100).map(\.seq) == (1...42).reversed().map { Int64($0) })
        #expect(try await s.since(fan, after: 0).headSeq == 1)
    }
}
