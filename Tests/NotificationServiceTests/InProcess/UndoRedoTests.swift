import Foundation
import Messages
import TestSupport
import Testing

@testable import NotificationService

/// API.md's undo/redo rule, in-process on the store's engine (`TEST_STORAGE_ENGINE`): undoing an
/// action removes its notification from the list, its group and the badge; doing it again leaves
/// exactly one (a new seq), never zero and never two, however often it alternates; and no device
/// gets a second push for the same actor and object.
struct UndoRedoTests {
    /// The recipient's notifications of `type` from `actor`, and its unread count.
    static func notes(_ t: PushTests.Setup, of recipient: Identity, type: String, from actor: Identity) async throws
        -> (items: [Notifications.Notification], unread: Int)
    {
        let list = try await t.s.notifications(recipient)
        return (list.items.filter { $0.type.wire == type && $0.actorId == actor.id }, list.unreadCount)
    }

    /// The recipient's groups, all of them (fewer than 100 here).
    static func groups(_ t: PushTests.Setup, of recipient: Identity) async throws -> [Notifications.Group] {
        try await t.s.app.notifications.store.groups(recipientId: recipient.id, page: .init(limit: 100)).items
    }

    /// Like/unlike 50 times from one account after its first like (and once more to end unliked), with a merge of the
    /// recent table part way so an undo also finds its row in the merged one: one notification
    /// while the like stands, none when it does not; the group's count and actors and the badge
    /// agree; each device got the first like's push and nothing after it.
    @Test(arguments: [true, false])
    func fiftyLikesAndUnlikesLeaveOneNotificationOrNone(endLiked: Bool) async throws {
        let t = try await PushTests.Setup()
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["owner", "liker", "other"])
        let (owner, liker, other) = (ids[0], ids[1], ids[2])
        try await t.device(owner, 1)
        try await t.device(owner, 2, session: "s2")
        try await feed.like(other, owner, post: "p1")
        try await feed.like(liker, owner, post: "p1")
        #expect(try await t.drain() == 4)  // both likes, on both devices
        let merger = RecentMerger(database: t.s.database, intervalMs: 1_000, batch: 100, logger: InProcessService.logger)
        let unlike = Profile.PostUnliked(postId: "p1", ownerId: owner.id, userId: liker.id)
        for i in 1...(endLiked ? 50 : 51) {
            if i % 2 == 1 { try await feed.emit(unlike) } else { try await feed.like(liker, owner, post: "p1") }
            if i == 10 { _ = try await merger.pass() }
            if i % 7 == 0 { _ = try await t.drain() }
        }
        _ = try await t.drain()

        let (likes, unread) = try await Self.notes(t, of: owner, type: "like", from: liker)
        #expect(likes.count == (endLiked ? 1 : 0))
        #expect(unread == (endLiked ? 2 : 1))
        let group = try #require(try await Self.groups(t, of: owner).first { $0.key == "like:p1" })
        #expect(group.count == (endLiked ? 2 : 1))
        #expect(group.actorIds == (endLiked ? [liker.id, other.id] : [other.id]))
        // Each device: one push of each like, the redo never pushed again.
        #expect(t.transport.messages.count == 4)
        #expect(try await t.queued() == 0)
    }

    /// A like undone before its push was sent (every device's push still waiting) announced
    /// nothing, so the redo is pushed, once; after that push went out, a further redo is not.
    @Test func aRedoIsPushedOnlyWhenTheUndonePushNeverWentOut() async throws {
        let t = try await PushTests.Setup()
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        let (owner, liker) = (ids[0], ids[1])
        try await t.device(owner, 1)
        try await t.device(owner, 2, session: "s2")
        let unlike = Profile.PostUnliked(postId: "p1", ownerId: owner.id, userId: liker.id)
        try await feed.like(liker, owner, post: "p1")
        #expect(try await t.queued() == 2)
        try await feed.emit(unlike)  // before the sender saw it
        #expect(try await t.queued() == 0)
        try await feed.like(liker, owner, post: "p1")
        #expect(try await t.drain() == 2)
        let stored = try await Self.notes(t, of: owner, type: "like", from: liker).items
        #expect(stored.count == 1)
        #expect(Set(t.transport.messages.map(\.deviceToken)) == [testToken(1), testToken(2)])
        #expect(try t.transport.messages.map { try DecodedPush($0).seq } == [stored[0].seq, stored[0].seq])

        try await feed.emit(unlike)
        try await feed.like(liker, owner, post: "p1")
        #expect(try await t.queued() == 0 && t.transport.messages.count == 2)
        #expect(try await Self.notes(t, of: owner, type: "like", from: liker).items.count == 1)
    }

    /// A push one device already got while another's still waited: the redo pushes neither (the
    /// first device must not get it twice).
    @Test func aRedoIsNotPushedWhenOneDeviceAlreadyGotTheFirst() async throws {
        let t = try await PushTests.Setup(batch: 1)
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        let (owner, liker) = (ids[0], ids[1])
        try await t.device(owner, 1)
        try await t.device(owner, 2, session: "s2")
        try await feed.like(liker, owner, post: "p1")
        #expect(try await t.sender.step() == 1)  // one device's push out, the other's waiting
        try await feed.emit(Profile.PostUnliked(postId: "p1", ownerId: owner.id, userId: liker.id))
        try await feed.like(liker, owner, post: "p1")
        #expect(try await t.queued() == 0)
        #expect(t.transport.messages.count == 1)
        #expect(try await Self.notes(t, of: owner, type: "like", from: liker).items.count == 1)
    }

    /// Follow/unfollow 20 times, ending following or not: one follow notification or none, in
    /// the list, the follow group and the badge; one push.
    @Test(arguments: [true, false])
    func followsAndUnfollowsLeaveOneNotificationOrNone(endFollowing: Bool) async throws {
        let t = try await PushTests.Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["star", "fan"])
        let (star, fan) = (ids[0], ids[1])
        try await t.device(star, 1)
        _ = try await t.s.follow(fan, "star")
        #expect(try await t.drain() == 1)
        for i in 1...(endFollowing ? 20 : 21) {
            if i % 2 == 1 { _ = try await t.s.unfollow(fan, "star") } else { _ = try await t.s.follow(fan, "star") }
        }
        _ = try await t.drain()
        let (follows, unread) = try await Self.notes(t, of: star, type: "follow", from: fan)
        #expect(follows.count == (endFollowing ? 1 : 0) && unread == (endFollowing ? 1 : 0))
        let followGroups = try await Self.groups(t, of: star).filter { $0.type.wire == "follow" }
        #expect(followGroups.map(\.count) == (endFollowing ? [1] : []))
        #expect(followGroups.first?.actorIds == (endFollowing ? [fan.id] : nil))
        #expect(t.transport.messages.count == 1)
    }
}
