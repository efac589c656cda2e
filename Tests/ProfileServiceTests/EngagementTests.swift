import Foundation
import Shared
import TestSupport
import Testing

/// Likes (idempotent, exact counts, likedByMe) and comments (validation, oldest first).
@Suite struct EngagementTests {
    @Test func likesAreIdempotentAndLikedByMeIsPerViewer() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let b = try await h.register("bob")
        let c = try await h.register("carol")
        let post = try await h.post(a)
        for _ in 0..<2 {
            let r = try await h.profile.call(Profile.SetLike.self, .init(userId: b.id, postId: post.id, liked: true))
            #expect(r == .init(liked: true, likeCount: 1))
        }
        _ = try await h.profile.call(Profile.SetLike.self, .init(userId: c.id, postId: post.id, liked: true))
        #expect(try await h.profile.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id)).likedByMe)
        #expect(try await !h.profile.call(Profile.GetPost.self, .init(viewerId: a.id, postId: post.id)).likedByMe)
        let grid = try await h.allPosts(c, "alice")
        #expect(grid[0].likedByMe && grid[0].likeCount == 2)
        let likers = try await h.profile.call(Profile.ListLikes.self, .init(postId: post.id, page: .init(limit: 1)))
        #expect(likers.items.map(\.username) == ["carol"])
        let rest = try await h.profile.call(
            Profile.ListLikes.self, .init(postId: post.id, page: .init(limit: 1, cursor: likers.nextCursor)))
        #expect(rest.items.map(\.username) == ["bob"] && rest.nextCursor == nil)
        for _ in 0..<2 {
            let r = try await h.profile.call(Profile.SetLike.self, .init(userId: b.id, postId: post.id, liked: false))
            #expect(r == .init(liked: false, likeCount: 1))
        }
        // One liked event per real change: bob like, carol like, bob unlike.
        let types = try await h.eventTypes().filter { $0 != Profile.PostCreated.type }
        #expect(types == [Profile.PostLiked.type, Profile.PostLiked.type, Profile.PostUnliked.type])
        let missing = await serviceError {
            try await h.profile.call(Profile.SetLike.self, .init(userId: b.id, postId: "nope", liked: true))
        }
        #expect(missing?.status == 404)
    }

    @Test func likeCountsAreExactUnderConcurrentLikesAndUnlikes() async throws {
        let h = try await ProfileHarness.start()
        let owner = try await h.register("owner")
        var users: [Me] = []
        for i in 0..<25 { users.append(try await h.register("fan\(i)")) }
        let post = try await h.post(owner)
        let profile = h.profile
        /// Sends `calls` all at once.
        func burst(_ calls: [(String, Bool)]) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (user, liked) in calls {
                    group.addTask {
                        _ = try await profile.call(Profile.SetLike.self, .init(userId: user, postId: post.id, liked: liked))
                    }
                }
                try await group.waitForAll()
            }
        }
        func check(_ expected: Int?) async throws {
            let fetched = try await h.profile.call(Profile.GetPost.self, .init(viewerId: owner.id, postId: post.id))
            var likers: [String] = []
            var cursor: String? = nil
            repeat {
                let page = try await h.profile.call(
                    Profile.ListLikes.self, .init(postId: post.id, page: .init(limit: 7, cursor: cursor)))
                likers += page.items.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil
            var likedByMe = 0
            for u in users where try await h.profile.call(Profile.GetPost.self, .init(viewerId: u.id, postId: post.id)).likedByMe
            {
                likedByMe += 1
            }
            #expect(fetched.likeCount == likers.count && Set(likers).count == likers.count && likedByMe == likers.count)
            if let expected { #expect(fetched.likeCount == expected) }
        }
        // 50 concurrent likes, each user twice: 25.
        try await burst(users.flatMap { [($0.id, true), ($0.id, true)] })
        try await check(25)
        // 50 concurrent calls: every user unlikes and likes at once (order unknown): the count
        // equals the users whose like stands.
        try await burst(users.flatMap { [($0.id, false), ($0.id, true)] })
        try await check(nil)
        // Everyone likes, then the even-numbered half unlike twice, concurrently: 12 remain.
        try await burst(users.map { ($0.id, true) })
        try await burst(
            users.enumerated().filter { $0.offset % 2 == 0 }.flatMap { [($0.element.id, false), ($0.element.id, false)] })
        try await check(12)
        // The events match the real changes: likes minus unlikes is the count.
        let types = try await h.eventTypes()
        let liked = types.filter { $0 == Profile.PostLiked.type }.count
        let unliked = types.filter { $0 == Profile.PostUnliked.type }.count
        #expect(liked - unliked == 12)
    }

    @Test func commentsAreValidatedAndListedOldestFirst() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let b = try await h.register("bob", name: "Bob")
        let post = try await h.post(a)
        for bad in ["", "   \n ", String(repeating: "x", count: 2_201)] {
            let e = await serviceError {
                try await h.profile.call(Profile.AddComment.self, .init(userId: b.id, postId: post.id, text: bad))
            }
            #expect(e?.status == 400 && e?.fields?.first?.field == "text")
        }
        let missing = await serviceError {
            try await h.profile.call(Profile.AddComment.self, .init(userId: b.id, postId: "nope", text: "hi"))
        }
        #expect(missing?.status == 404)
        var ids: [String] = []
        for i in 0..<5 {
            let c = try await h.profile.call(
                Profile.AddComment.self, .init(userId: i % 2 == 0 ? b.id : a.id, postId: post.id, text: " c\(i) "))
            #expect(c.text == "c\(i)" && c.postId == post.id)
            ids.append(c.id)
        }
        let long = try await h.profile.call(
            Profile.AddComment.self, .init(userId: b.id, postId: post.id, text: String(repeating: "y", count: 2_200)))
        ids.append(long.id)
        let first = try await h.profile.call(Profile.ListComments.self, .init(postId: post.id, page: .init(limit: 4)))
        #expect(first.items.map(\.id) == Array(ids.prefix(4)))
        #expect(
            first.items[0].author.username == "bob" && first.items[0].author.name == "Bob"
                && first.items[1].author.username == "alice")
        let second = try await h.profile.call(
            Profile.ListComments.self, .init(postId: post.id, page: .init(limit: 4, cursor: first.nextCursor)))
        #expect(second.items.map(\.id) == Array(ids.suffix(2)) && second.nextCursor == nil)
        #expect(try await h.profile.call(Profile.GetPost.self, .init(viewerId: a.id, postId: post.id)).commentCount == 6)
        let bad = await serviceError {
            try await h.profile.call(Profile.ListComments.self, .init(postId: post.id, page: .init(limit: 4, cursor: "x")))
        }
        #expect(bad?.code == "invalid_cursor")
        #expect(try await h.eventTypes().filter { $0 == Profile.PostCommented.type }.count == 6)
    }
}
