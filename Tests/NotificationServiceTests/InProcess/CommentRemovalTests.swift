import Foundation
import Messages
import TestSupport
import Testing

@testable import NotificationService

/// `profile.comment.deleted` in process, on the store's engine (`TEST_STORAGE_ENGINE`): a deleted
/// comment's notification leaves the flat list, its group (count and actors) and the badge,
/// whether it is still in the recent table or already merged into the big one; a new comment
/// notifies again (one notification per comment that exists: API.md's undo/redo rule); a push
/// not sent yet is withdrawn; a replayed deletion, or one NotificationService never had a
/// notification for, changes nothing.
struct CommentRemovalTests {
    static func commented(_ author: Identity, _ owner: Identity, post: String, comment: String) -> Profile.PostCommented {
        Profile.PostCommented(
            postId: post, ownerId: owner.id, userId: author.id, commentId: comment, text: "text of \(comment)",
            thumbnailURL: "https://img.example/\(post).jpg")
    }

    static func deleted(_ author: Identity, _ owner: Identity, post: String, comment: String, by: Identity? = nil)
        -> Profile.CommentDeleted
    {
        Profile.CommentDeleted(
            postId: post, ownerId: owner.id, userId: author.id, commentId: comment, deletedBy: (by ?? author).id)
    }

    /// The recipient's comment notifications (detail = text), unread count and comment groups.
    static func state(_ t: PushTests.Setup, _ owner: Identity) async throws
        -> (comments: [String], unread: Int, groups: [Notifications.Group])
    {
        let list = try await t.s.notifications(owner)
        let groups = try await UndoRedoTests.groups(t, of: owner).filter { $0.type.wire == "comment" }
        return (list.items.filter { $0.type.wire == "comment" }.compactMap(\.detail), list.unreadCount, groups)
    }

    @Test(arguments: [false, true])
    func aDeletedCommentLeavesTheListItsGroupAndTheBadge(merged: Bool) async throws {
        let t = try await PushTests.Setup()
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["owner", "ann", "ben"])
        let (owner, ann, ben) = (ids[0], ids[1], ids[2])
        try await feed.emit(Self.commented(ann, owner, post: "p1", comment: "c1"))
        try await feed.emit(Self.commented(ben, owner, post: "p1", comment: "c2"))
        try await feed.emit(Self.commented(ann, owner, post: "p1", comment: "c3"))
        if merged {
            let merger = RecentMerger(database: t.s.database, intervalMs: 1_000, batch: 100, logger: InProcessService.logger)
            _ = try await merger.pass()
            let recent = try await t.s.database.read { try $0.scalar("SELECT COUNT(*) FROM recent_notifications") ?? -1 }
            #expect(recent == 0)
        }
        var seen = try await Self.state(t, owner)
        #expect(seen.comments == ["text of c3", "text of c2", "text of c1"] && seen.unread == 3)
        #expect(seen.groups.map(\.count) == [3] && seen.groups.first?.actorIds == [ann.id, ben.id])

        // Ann deletes her newest: the group keeps both actors, Ben now the newest.
        try await feed.emit(Self.deleted(ann, owner, post: "p1", comment: "c3"))
        seen = try await Self.state(t, owner)
        #expect(seen.comments == ["text of c2", "text of c1"] && seen.unread == 2)
        #expect(seen.groups.map(\.count) == [2] && seen.groups.first?.actorIds == [ben.id, ann.id])
        // The post's owner deletes Ben's: Ben leaves the group.
        try await feed.emit(Self.deleted(ben, owner, post: "p1", comment: "c2", by: owner))
        seen = try await Self.state(t, owner)
        #expect(seen.comments == ["text of c1"] && seen.unread == 1)
        #expect(seen.groups.map(\.count) == [1] && seen.groups.first?.actorIds == [ann.id])
        // Read, then deleted: the badge stays at 0, the group goes.
        _ = try await t.s.markRead(owner, upTo: 3)
        try await feed.emit(Self.deleted(ann, owner, post: "p1", comment: "c1"))
        seen = try await Self.state(t, owner)
        #expect(seen.comments.isEmpty && seen.unread == 0 && seen.groups.isEmpty)

        // A replayed deletion, and one of a comment that never notified (the owner's own, an
        // unknown actor), change nothing; a new comment notifies again, with a new seq.
        try await feed.emit(Self.deleted(ann, owner, post: "p1", comment: "c1"))
        try await feed.emit(Self.deleted(owner, owner, post: "p1", comment: "c9"))
        try await feed.emit(
            Profile.CommentDeleted(postId: "p1", ownerId: owner.id, userId: "never-seen", commentId: "c8", deletedBy: owner.id))
        try await feed.emit(Self.commented(ann, owner, post: "p1", comment: "c4"))
        let list = try await t.s.notifications(owner)
        #expect(list.items.map(\.detail) == ["text of c4"] && list.items.first?.seq == 4 && list.unreadCount == 1)
        seen = try await Self.state(t, owner)
        #expect(seen.groups.map(\.count) == [1] && seen.groups.first?.actorIds == [ann.id])
    }

    /// Comment, delete, comment again, ten times: one notification per comment that stands, the
    /// group and the badge agreeing, each new comment pushed once (it is a new comment, not the
    /// old one again), and a deleted comment's push withdrawn while it still waited.
    @Test func commentingAgainLeavesOneNotificationPerCommentAndWithdrawsUnsentPushes() async throws {
        let t = try await PushTests.Setup()
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["owner", "ann"])
        let (owner, ann) = (ids[0], ids[1])
        try await t.device(owner, 1)
        for i in 0..<10 {
            try await feed.emit(Self.commented(ann, owner, post: "p1", comment: "c\(i)"))
            if i % 2 == 0 { #expect(try await t.drain() == 1) }  // pushed before the deletion
            try await feed.emit(Self.deleted(ann, owner, post: "p1", comment: "c\(i)"))
            #expect(try await t.queued() == 0)
        }
        try await feed.emit(Self.commented(ann, owner, post: "p1", comment: "last"))
        #expect(try await t.drain() == 1)
        let seen = try await Self.state(t, owner)
        #expect(seen.comments == ["text of last"] && seen.unread == 1)
        #expect(seen.groups.map(\.count) == [1])
        // The five sent before their deletion and the last one: the five withdrawn never went out.
        #expect(t.transport.messages.count == 6)
    }
}
