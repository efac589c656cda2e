import Foundation
import Harness
import Messages
import Storage
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// `profile.delete_comment` in process, on the store's engine (`TEST_STORAGE_ENGINE`): the
/// comment's author or the post's owner deletes it, the post's `commentCount` goes down and
/// `profile.comment.deleted` is emitted in the same transaction; anyone else is 403 and nothing
/// changes; an unknown post or comment, a comment of another post, and a comment already deleted
/// are 404; many deletions of one comment at once delete it once, also from two replicas (two
/// `Database`s of one database), one held inside its transaction while the other waits.
@Suite struct CommentDeletionTests {
    static func comment(_ f: ProfileFixture, _ user: Me, on post: Profile.Post, _ text: String) async throws -> Profile.Comment {
        try await f.call(Profile.AddComment.self, .init(userId: user.id, postId: post.id, text: text))
    }

    static func delete(_ f: ProfileFixture, _ user: Me, _ post: Profile.Post, _ commentId: String) async throws {
        _ = try await f.call(Profile.DeleteComment.self, .init(userId: user.id, postId: post.id, commentId: commentId))
    }

    static func comments(_ f: ProfileFixture, _ post: Profile.Post) async throws -> [String] {
        try await f.call(Profile.ListComments.self, .init(postId: post.id, page: .init(limit: 100))).items.map(\.text)
    }

    static func commentCount(_ f: ProfileFixture, _ post: Profile.Post) async throws -> Int {
        try await f.call(Profile.GetPost.self, .init(viewerId: post.owner.id, postId: post.id)).commentCount
    }

    @Test func theAuthorOrThePostsOwnerDeletesItWithItsCountAndOneEvent() async throws {
        let f = try await ProfileFixture()
        let owner = try await f.register("owner")
        let author = try await f.register("author")
        let post = try await f.post(owner)
        let first = try await Self.comment(f, author, on: post, "one")
        let second = try await Self.comment(f, author, on: post, "two")
        let own = try await Self.comment(f, owner, on: post, "mine")
        #expect(try await Self.commentCount(f, post) == 3)

        try await Self.delete(f, author, post, first.id)  // its author
        try await Self.delete(f, owner, post, second.id)  // the post's owner
        try await Self.delete(f, owner, post, own.id)  // the owner's own
        #expect(try await Self.commentCount(f, post) == 0)
        #expect(try await Self.comments(f, post).isEmpty)
        let deleted = try await f.events(Profile.CommentDeleted.self)
        #expect(deleted.map(\.commentId) == [first.id, second.id, own.id])
        #expect(deleted.map(\.userId) == [author.id, author.id, owner.id])
        #expect(deleted.map(\.deletedBy) == [author.id, owner.id, owner.id])
        #expect(deleted.allSatisfy { $0.postId == post.id && $0.ownerId == owner.id })

        // Already deleted: 404, and nothing changes again.
        let again = await serviceError { try await Self.delete(f, author, post, first.id) }
        #expect(again?.status == 404 && again?.code == "not_found")
        #expect(try await f.events(Profile.CommentDeleted.self).count == 3)
        #expect(try await Self.commentCount(f, post) == 0)
    }

    @Test func anyoneElseIsForbiddenAndUnknownPostsAndCommentsAreNotFound() async throws {
        let f = try await ProfileFixture()
        let owner = try await f.register("owner")
        let author = try await f.register("author")
        let other = try await f.register("other")
        let post = try await f.post(owner)
        let elsewhere = try await f.post(other)
        let comment = try await Self.comment(f, author, on: post, "hello")
        let head = f.database.currentHead()

        let forbidden = await serviceError { try await Self.delete(f, other, post, comment.id) }
        #expect(forbidden?.status == 403 && forbidden?.code == "forbidden")
        // The owner of another post is anyone else here.
        #expect(await serviceError { try await Self.delete(f, other, elsewhere, comment.id) }?.status == 404)
        #expect(await serviceError { try await Self.delete(f, author, elsewhere, comment.id) }?.status == 404)
        let noPost = await serviceError {
            _ = try await f.call(Profile.DeleteComment.self, .init(userId: owner.id, postId: "nope", commentId: comment.id))
        }
        #expect(noPost?.status == 404)
        #expect(await serviceError { try await Self.delete(f, owner, post, "nope") }?.status == 404)
        #expect(try await Self.comments(f, post) == ["hello"])
        #expect(try await Self.commentCount(f, post) == 1)
        #expect(try await f.events().filter { $0.seq > head }.isEmpty)

        // A deleted post's comments go with it: deleting one afterwards is 404.
        _ = try await f.call(Profile.DeletePost.self, .init(userId: owner.id, postId: post.id))
        #expect(await serviceError { try await Self.delete(f, author, post, comment.id) }?.status == 404)
        #expect(try await f.events(Profile.CommentDeleted.self).isEmpty)
    }

    @Test func manyDeletionsOfOneCommentAtOnceDeleteItOnce() async throws {
        let f = try await ProfileFixture()
        let owner = try await f.register("owner")
        let author = try await f.register("author")
        let post = try await f.post(owner)
        let keep = try await Self.comment(f, author, on: post, "keep")
        let comment = try await Self.comment(f, author, on: post, "go")
        let outcomes = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<12 {
                group.addTask {
                    do {
                        try await Self.delete(f, i % 2 == 0 ? owner : author, post, comment.id)
                        return 204
                    } catch let error as ServiceError {
                        return error.status
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == 204 }.count == 1 && outcomes.filter { $0 == 404 }.count == 11, "\(outcomes)")
        #expect(try await Self.commentCount(f, post) == 1)
        #expect(try await Self.comments(f, post) == [keep.text])
        #expect(try await f.events(Profile.CommentDeleted.self).map(\.commentId) == [comment.id])
    }

    /// A replica's deletion is held inside its transaction (the row deleted, not committed)
    /// while another replica's deletion of the same comment runs on a second `Database` of the
    /// same database: on PostgreSQL the second reads the comment, passes its checks and waits on
    /// the row lock, on SQLite it waits for the write lock; released, the second finds nothing
    /// to delete: 404, the count lowered once, one event.
    @Test func aDeletionRacingAnotherReplicasIsNotFoundAndCountsOnce() async throws {
        let f = try await ProfileFixture()
        let owner = try await f.register("owner")
        let author = try await f.register("author")
        let post = try await f.post(owner)
        let comment = try await Self.comment(f, author, on: post, "go")
        _ = try await Self.comment(f, author, on: post, "stay")
        let second = try Database(
            location: try TestStorage.location(f.directory, "profile"), producer: "profile",
            migrations: ProfileSchema.migrations, legacy: ProfileSchema.legacy)
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let held = Task {
            try await f.database.write { tx in
                try SQLEngagementStore.deleteComment(postId: post.id, commentId: comment.id, by: author.id, in: tx)
                started.signal()
                release.wait()
            }
        }
        await onThread { started.wait() }
        let other = SQLEngagementStore(database: second)
        let racing = Task { try await other.deleteComment(postId: post.id, commentId: comment.id, by: owner.id) }
        if TestStorage.engine == .postgres {
            let url = try TestStorage.url(f.directory, "profile")
            let name = String(url.split(separator: "/").last?.prefix { $0 != "?" } ?? "")
            let admin = try PostgresConnection(url: url)
            try await eventually("the second deletion waiting for the comment's row lock") {
                try admin.scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = \(name) AND wait_event_type = 'Lock'") ?? 0 > 0
            }
        }
        release.signal()
        try await held.value
        let lost = await #expect(throws: ServiceError.self) { try await racing.value }
        #expect(lost?.status == 404)
        #expect(try await Self.commentCount(f, post) == 1)
        #expect(try await Self.comments(f, post) == ["stay"])
        #expect(try await f.events(Profile.CommentDeleted.self).map(\.deletedBy) == [author.id])
    }
}
