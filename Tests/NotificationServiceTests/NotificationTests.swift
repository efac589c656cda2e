import Foundation
import Shared
import TestSupport
import Testing

/// Notifications over ZeroMQ: from follows and from ProfileService's events, dedup, seq,
/// read marks, follow state at read time, post deletion, fan-out, and replay without duplicates.
@Suite(.serialized)
struct NotificationTests {
    @Test func followNotificationStateIsComputedAtReadTime() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let alice = try await h.auth.register("alice")
        let bob = try await h.auth.register("bob")
        try await h.follow(alice, "bob")
        var list = try await h.notifications(bob)
        #expect(list.items.count == 1)
        #expect(list.unreadCount == 1)
        let note = try #require(list.items.first)
        #expect(
            note.type == "follow" && note.text == "alice started following you."
                && note.actorId == alice.id)
        #expect(note.seq == 1 && !note.read && note.post == nil && note.followState == .notFollowing)

        try await h.follow(bob, "alice")  // follow back
        list = try await h.notifications(bob)
        #expect(list.items.first?.followState == .following)

        // unfollow + follow again: no second notification for bob
        try await h.unfollow(alice, "bob")
        try await h.follow(alice, "bob")
        list = try await h.notifications(bob)
        #expect(list.items.count == 1)
        // alice got bob's follow-back
        #expect(try await h.notifications(alice).items.map(\.text) == ["bob started following you."])
        // the service published notify.created for each stored notification
        let replay = try await h.client.call(Ops.Replay.self, .init(after: 0, limit: 1_000))
        let created = replay.events.filter { $0.contains("\"type\":\"notify.created\"") }
        #expect(created.count == 2)
    }

    @Test func profileEventsMakeNotifications() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let ids = try await h.auth.register(["owner", "liker", "tagged", "fan", "quietfan"])
        let (owner, liker, tagged, fan, quietFan) = (ids[0], ids[1], ids[2], ids[3], ids[4])
        try await h.follow(fan, "owner", notifyPosts: true)
        try await h.follow(quietFan, "owner")  // notifyPosts false: no post notification
        try await h.follow(owner, "fan")  // so owner has one notification: seq 1

        try await h.like(liker, owner, post: "p1")
        try await h.like(owner, owner, post: "p1")  // own like: nothing
        try await h.profile.emit(Profile.PostUnliked(postId: "p1", ownerId: owner.id, userId: liker.id))
        try await h.like(liker, owner, post: "p1")  // like again: no second
        try await h.profile.emit(
            Profile.PostCommented(
                postId: "p1", ownerId: owner.id, userId: liker.id, commentId: "c1", text: "nice!",
                thumbnailURL: "https://img.example/p1.jpg"))
        try await h.profile.emit(
            Profile.PostCommented(
                postId: "p1", ownerId: owner.id, userId: liker.id, commentId: "c2", text: "again",
                thumbnailURL: "https://img.example/p1.jpg"))
        try await h.profile.emit(
            Profile.PostCreated(
                postId: "p2", ownerId: owner.id, thumbnailURL: "https://img.example/p2.jpg",
                taggedUserIds: [tagged.id, owner.id],
                createdAt: Timestamp.now()))
        try await h.waitForHead(fan, atLeast: 2)
        try await h.waitForHead(owner, atLeast: 5)

        let ownerNotes = try await h.allNotifications(owner)
        #expect(ownerNotes.map(\.seq) == [5, 4, 3, 2, 1])
        #expect(
            ownerNotes.map(\.text) == [
                "liker commented: again", "liker commented: nice!", "liker liked your photo.",
                "quietfan started following you.",
                "fan started following you.",
            ])
        #expect(ownerNotes.prefix(3).map(\.type) == ["comment", "comment", "like"])
        #expect(ownerNotes[2].post == .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"))
        #expect(ownerNotes.filter { $0.actorId == owner.id }.isEmpty)

        let fanNotes = try await h.allNotifications(fan)
        #expect(fanNotes.map(\.type) == ["post", "follow"])
        #expect(fanNotes[0].text == "owner shared a new post.")
        #expect(fanNotes[0].post == .init(id: "p2", thumbnailURL: "https://img.example/p2.jpg"))
        #expect(try await h.allNotifications(quietFan).isEmpty)
        let taggedNotes = try await h.allNotifications(tagged)
        #expect(taggedNotes.map(\.text) == ["owner tagged you in a post."])
        #expect(taggedNotes.first?.post?.id == "p2")

        // Deleting p1 removes the like and both comments; seqs are never reused.
        try await h.profile.emit(Profile.PostDeleted(postId: "p1", ownerId: owner.id))
        try await h.profile.emit(Profile.PostDeleted(postId: "p2", ownerId: owner.id))
        try await h.like(fan, owner, post: "p3")  // a marker behind the deletions
        try await h.waitForHead(owner, atLeast: 6)
        let after = try await h.allNotifications(owner)
        #expect(after.map(\.type) == ["like", "follow", "follow"])
        #expect(after.map(\.seq) == [6, 2, 1])
        #expect(try await h.allNotifications(fan).map(\.type) == ["follow"])
        #expect(try await h.allNotifications(tagged).isEmpty)
    }

    /// Events published in one transaction reach the service together and are applied in
    /// batches: a new post in the middle, an actor the replica does not know yet (looked up at
    /// AuthService) and a like on a video all come out right, once each, in order.
    @Test func eventsArrivingTogetherAreAppliedInBatches() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let owner = try await h.auth.register("owner")
        let fan = try await h.auth.register("fan")
        let likers = try await h.auth.register((1...40).map { "liker\($0)" })
        let stranger = try await h.auth.register("stranger", publish: false)  // not in the replica
        try await h.follow(fan, "owner", notifyPosts: true)
        try await h.waitForHead(owner, atLeast: 1)
        try await h.profile.write { tx in
            for (i, liker) in likers.enumerated() {
                try tx.emit(
                    Profile.PostLiked(
                        postId: "p1", ownerId: owner.id, userId: liker.id, thumbnailURL: "https://img.example/p1.jpg"))
                if i == 19 {
                    try tx.emit(
                        Profile.PostCreated(
                            postId: "p2", ownerId: owner.id, thumbnailURL: "https://img.example/p2.jpg",
                            taggedUserIds: [], createdAt: Timestamp.now()))
                }
            }
            try tx.emit(
                Profile.PostLiked(
                    postId: "p1", ownerId: owner.id, userId: stranger.id, thumbnailURL: "https://img.example/p1.jpg"))
            try tx.emit(
                Profile.PostLiked(
                    postId: "v1", ownerId: owner.id, userId: likers[0].id, thumbnailURL: "https://img.example/v1.jpg",
                    postType: "video"))
            // Repeated in the same burst: the dedup key absorbs it.
            try tx.emit(
                Profile.PostLiked(
                    postId: "p1", ownerId: owner.id, userId: likers[1].id, thumbnailURL: "https://img.example/p1.jpg"))
        }
        // 1 follow + 40 likes + the stranger's + the video like.
        try await h.waitForHead(owner, atLeast: 43)
        try await h.waitForHead(fan, atLeast: 1)
        let notes = try await h.allNotifications(owner, pageSize: 100)
        #expect(notes.map(\.seq) == Array((1...43).reversed()))
        #expect(notes[0].text == "liker1 liked your video.")
        #expect(notes[1].text == "stranger liked your photo.")
        #expect(notes.dropFirst(2).prefix(40).map(\.text) == (1...40).reversed().map { "liker\($0) liked your photo." })
        #expect(try await h.allNotifications(fan).map(\.text) == ["owner shared a new post."])
        let ping = try await h.client.call(Ops.Ping.self, Empty())
        #expect((ping.counters["subscriber.profile.batches"] ?? 0) > 0)
    }

    @Test func replayedEventsMakeNoDuplicatesAndNoneAreLost() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let ids = try await h.auth.register(["owner", "a", "b", "c"])
        let owner = ids[0]
        try await h.like(ids[1], owner, post: "p1")
        try await h.waitForHead(owner, atLeast: 1)

        // Events while the service is down arrive after it restarts, once each.
        h.stopService()
        try await h.like(ids[2], owner, post: "p1")
        try await h.like(ids[3], owner, post: "p1")
        try await h.like(ids[1], owner, post: "p1")  // a duplicate action
        try await h.startService()
        try await h.waitForHead(owner, atLeast: 3)

        // Rewind the subscriber cursor: every profile event is delivered again.
        h.stopService()
        let db = try SQLiteConnection(path: h.databasePath)
        try db.query("UPDATE event_cursor SET seq = 0 WHERE producer = 'profile'")
        try await h.startService()
        try await h.like(ids[1], owner, post: "p9")  // a marker: delivered after all replayed ones
        try await h.waitForHead(owner, atLeast: 4)

        let notes = try await h.allNotifications(owner)
        #expect(notes.map(\.seq) == [4, 3, 2, 1])
        #expect(notes.map(\.actorId) == [ids[1].id, ids[3].id, ids[2].id, ids[1].id])
        #expect(try await h.notifications(owner).unreadCount == 4)
    }

    @Test func newPostFansOutToEveryFollowerWithNotifyPosts() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let star = try await h.auth.register("star")
        let fans = try await h.auth.register((0..<300).map { "f\($0)" })
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, fan) in fans.enumerated() {
                group.addTask { try await h.follow(fan, "star", notifyPosts: i % 3 != 0) }
            }
            try await group.waitForAll()
        }
        try await h.profile.emit(
            Profile.PostCreated(
                postId: "big", ownerId: star.id, thumbnailURL: "https://img.example/big.jpg",
                taggedUserIds: [], createdAt: Timestamp.now()))
        try await h.like(fans[0], star, post: "marker")
        try await h.waitForHead(star, atLeast: 301)
        for (i, fan) in fans.enumerated() {
            let notes = try await h.notifications(fan).items
            #expect(notes.map(\.type) == (i % 3 != 0 ? ["post"] : []))
        }
    }

    /// The seeds' NotificationView mock data: 100 notifications alternating follow (even x)
    /// and like (odd x) from users email0…email99, the recipient following back x < 50.
    @Test func seedsMockScreenReadsBack() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let demo = try await h.auth.register("demo")
        let actors = try await h.auth.register((0..<100).map { "email\($0)" })
        let photo = "https://i.stack.imgur.com/GsDIl.jpg"
        for x in 0..<100 {
            if x % 2 == 0 {
                try await h.follow(actors[x], "demo")
            } else {
                try await h.profile.emit(
                    Profile.PostLiked(
                        postId: "post \(x)", ownerId: demo.id, userId: actors[x].id, thumbnailURL: photo))
                try await h.waitForHead(demo, atLeast: Int64(x + 1))
            }
        }
        for x in stride(from: 0, to: 50, by: 2) { try await h.follow(demo, "email\(x)") }

        let notes = try await h.allNotifications(demo, pageSize: 20)
        #expect(notes.count == 100)
        for (i, note) in notes.enumerated() {
            let x = 99 - i
            #expect(note.seq == Int64(x + 1))
            #expect(note.actorId == actors[x].id)
            #expect(!note.read)
            if x % 2 == 0 {
                #expect(note.type == "follow")
                #expect(note.text == "email\(x) started following you.")
                #expect(note.followState == (x < 50 ? .following : .notFollowing))
                #expect(note.post == nil)
            } else {
                #expect(note.type == "like")
                #expect(note.text == "email\(x) liked your photo.")
                #expect(note.post == .init(id: "post \(x)", thumbnailURL: photo))
                #expect(note.followState == nil)
            }
        }
        #expect(try await h.notifications(demo, limit: 1).unreadCount == 100)

        // Mark read up to 50; stream resume after 90.
        let marked = try await h.client.call(
            Graph.MarkRead.self, .init(recipientId: demo.id, upToSeq: 50))
        #expect(marked.unreadCount == 50)
        let again = try await h.client.call(
            Graph.MarkRead.self, .init(recipientId: demo.id, upToSeq: 10))  // never backwards
        #expect(again.unreadCount == 50)
        let page = try await h.notifications(demo, limit: 100)
        #expect(page.items.filter(\.read).map(\.seq) == (1...50).reversed().map { Int64($0) })
        let since = try await h.client.call(
            Graph.NotificationsSince.self, .init(recipientId: demo.id, afterSeq: 90, limit: 100))
        #expect(since.headSeq == 100)
        #expect(since.items.map(\.seq) == (91...100).map { Int64($0) })
        let all = try await h.client.call(
            Graph.MarkRead.self, .init(recipientId: demo.id, upToSeq: 1_000))
        #expect(all.unreadCount == 0)
    }
}
