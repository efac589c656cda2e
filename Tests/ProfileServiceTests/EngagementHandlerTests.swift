import Foundation
import Messages
import TestSupport
import Testing

@testable import ProfileService

/// `EngagementHandlers` in-process: likes (idempotent, exact counters, one event per real change,
/// `likedByMe` per viewer) and comments (validated, trimmed, oldest first).
@Suite struct EngagementHandlerTests {
    @Test func likesAreIdempotentWithExactCountersAndLikedByMePerViewer() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        let c = try await f.register("carol")
        let post = try await f.post(a)
        for _ in 0..<2 {
            let r = try await f.call(Profile.SetLike.self, .init(userId: b.id, postId: post.id, liked: true))
            #expect(r == .init(liked: true, likeCount: 1))
        }
        _ = try await f.call(Profile.SetLike.self, .init(userId: c.id, postId: post.id, liked: true))
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id)).likedByMe)
        #expect(try await !f.call(Profile.GetPost.self, .init(viewerId: a.id, postId: post.id)).likedByMe)
        let grid = try await f.allPosts(c, "alice")
        #expect(grid[0].likedByMe && grid[0].likeCount == 2)
        // Likers newest first, paged.
        let likers = try await f.call(Profile.ListLikes.self, .init(postId: post.id, page: .init(limit: 1)))
        #expect(likers.items.map(\.username) == ["carol"])
        let rest = try await f.call(
            Profile.ListLikes.self, .init(postId: post.id, page: .init(limit: 1, cursor: likers.nextCursor)))
        #expect(rest.items.map(\.username) == ["bob"] && rest.nextCursor == nil)
        for _ in 0..<2 {
            let r = try await f.call(Profile.SetLike.self, .init(userId: b.id, postId: post.id, liked: false))
            #expect(r == .init(liked: false, likeCount: 1))
        }
        // One event per real change: bob likes, carol likes, bob unlikes.
        let types = try await f.eventTypes().filter { $0 != Profile.PostCreated.type }
        #expect(types == [Profile.PostLiked.type, Profile.PostLiked.type, Profile.PostUnliked.type])
        let liked = try await f.events(Profile.PostLiked.self)
        #expect(liked.map(\.userId) == [b.id, c.id] && liked.allSatisfy { $0.ownerId == a.id && $0.postType == "photo" })
        // Each like carries its liker's public fields (the live path shows them as they are).
        #expect(liked.map(\.user?.username) == ["bob", "carol"] && liked.allSatisfy { $0.user?.id == $0.userId })
        #expect(try await f.events(Profile.PostUnliked.self).map(\.userId) == [b.id])
        let missing = await serviceError {
            try await f.call(Profile.SetLike.self, .init(userId: b.id, postId: "nope", liked: true))
        }
        #expect(missing?.status == 404)
        let nobody = await serviceError {
            try await f.call(Profile.SetLike.self, .init(userId: Me.unknown.id, postId: post.id, liked: true))
        }
        #expect(nobody?.status == 404)
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: a.id, postId: post.id)).likeCount == 1)
    }

    @Test func likeCountsAreExactUnderConcurrentLikesAndUnlikes() async throws {
        let f = try await ProfileFixture()
        let owner = try await f.register("owner")
        var users: [Me] = []
        for i in 0..<25 { users.append(try await f.register("fan\(i)")) }
        let post = try await f.post(owner)
        /// Runs `calls` all at once through the registered handler.
        func burst(_ calls: [(String, Bool)]) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (user, liked) in calls {
                    group.addTask {
                        _ = try await f.call(Profile.SetLike.self, .init(userId: user, postId: post.id, liked: liked))
                    }
                }
                try await group.waitForAll()
            }
        }
        func check(_ expected: Int?) async throws {
            let fetched = try await f.call(Profile.GetPost.self, .init(viewerId: owner.id, postId: post.id))
            var likers: [String] = []
            var cursor: String? = nil
            repeat {
                let page = try await f.call(Profile.ListLikes.self, .init(postId: post.id, page: .init(limit: 7, cursor: cursor)))
                likers += page.items.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil
            var likedByMe = 0
            for u in users where try await f.call(Profile.GetPost.self, .init(viewerId: u.id, postId: post.id)).likedByMe {
                likedByMe += 1
            }
            #expect(fetched.likeCount == likers.count && Set(likers).count == likers.count && likedByMe == likers.count)
            if let expected { #expect(fetched.likeCount == expected) }
        }
        try await burst(users.flatMap { [($0.id, true), ($0.id, true)] })
        try await check(25)
        // Every user unlikes and likes at once (order unknown): the count is the likes that stand.
        try await burst(users.flatMap { [($0.id, false), ($0.id, true)] })
        try await check(nil)
        try await burst(users.map { ($0.id, true) })
        try await burst(
            users.enumerated().filter { $0.offset % 2 == 0 }.flatMap { [($0.element.id, false), ($0.element.id, false)] })
        try await check(12)
        // The events match the real changes: likes minus unlikes is the count.
        let types = try await f.eventTypes()
        #expect(types.filter { $0 == Profile.PostLiked.type }.count - types.filter { $0 == Profile.PostUnliked.type }.count == 12)
    }

    @Test func commentsAreValidatedTrimmedAndListedOldestFirst() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob", name: "Bob")
        let post = try await f.post(a)
        for bad in ["", "   \n ", String(repeating: "x", count: 2_201)] {
            let e = await serviceError { try await f.app.engagement.addComment(.init(userId: b.id, postId: post.id, text: bad)) }
            #expect(e?.status == 400 && e?.fields?.map(\.field) == ["text"], "\(bad.prefix(8).debugDescription)")
        }
        let missing = await serviceError {
            try await f.call(Profile.AddComment.self, .init(userId: b.id, postId: "nope", text: "hi"))
        }
        #expect(missing?.status == 404)
        let nobody = await serviceError {
            try await f.call(Profile.AddComment.self, .init(userId: Me.unknown.id, postId: post.id, text: "hi"))
        }
        #expect(nobody?.status == 404)
        var ids: [String] = []
        for i in 0..<5 {
            let c = try await f.call(
                Profile.AddComment.self, .init(userId: i % 2 == 0 ? b.id : a.id, postId: post.id, text: " c\(i) \n"))
            #expect(c.text == "c\(i)" && c.postId == post.id && c.createdAt.hasSuffix("Z"))
            ids.append(c.id)
        }
        let long = try await f.app.engagement.addComment(
            .init(userId: b.id, postId: post.id, text: String(repeating: "y", count: 2_200)))
        ids.append(long.id)
        let first = try await f.call(Profile.ListComments.self, .init(postId: post.id, page: .init(limit: 4)))
        #expect(first.items.map(\.id) == Array(ids.prefix(4)))
        #expect(first.items[0].author == PublicUser(id: b.id, username: "bob", name: "Bob", bio: "", profilePhotoURL: nil))
        #expect(first.items[1].author.username == "alice" && first.items.map(\.text) == ["c0", "c1", "c2", "c3"])
        let second = try await f.call(
            Profile.ListComments.self, .init(postId: post.id, page: .init(limit: 4, cursor: first.nextCursor)))
        #expect(second.items.map(\.id) == Array(ids.suffix(2)) && second.nextCursor == nil)
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: a.id, postId: post.id)).commentCount == 6)
        let commented = try await f.events(Profile.PostCommented.self)
        #expect(commented.map(\.commentId) == ids && commented.first?.text == "c0" && commented.first?.ownerId == a.id)
        #expect(
            commented.map(\.user) == ids.indices.map { $0 % 2 == 0 || $0 == 5 ? first.items[0].author : first.items[1].author })
    }
}
