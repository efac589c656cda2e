import Foundation
import Messages
import TestSupport
import Testing

@testable import ProfileService

/// `PostHandlers` in-process: validation, tags (unknown tagged users named), the grid and the
/// tagged tab with cursor paging, owner-only delete.
@Suite struct PostHandlerTests {
    @Test func createPostReportsEveryFieldErrorAtOnce() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let error = await serviceError {
            try await f.app.posts.createPost(
                .init(
                    ownerId: a.id, postType: "gif", mediaURL: "cdn/relative.jpg", thumbnailURL: "ftp://cdn.example.com/t.jpg",
                    caption: String(repeating: "c", count: 2_201), taggedUsernames: ["ghost"]))
        }
        #expect(error?.status == 400 && error?.code == "invalid_field")
        #expect(
            fieldCodes(error) == [
                "postType": "invalid_post_type", "mediaURL": "invalid_url", "thumbnailURL": "invalid_url",
                "caption": "too_long", "taggedUsernames": "unknown_user",
            ])
        #expect(try await f.app.profiles.header("alice").postCount == 0)
        #expect(try await f.eventTypes().isEmpty)
    }

    @Test func unknownTaggedUsersAreNamedAndTooManyTagsRefused() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let unknown = await serviceError {
            try await f.app.posts.createPost(
                .init(
                    ownerId: a.id, postType: "photo", mediaURL: "https://x.example/m.jpg",
                    thumbnailURL: "https://x.example/t.jpg", caption: nil, taggedUsernames: ["alice", "Ghost", "nobody"]))
        }
        #expect(unknown?.status == 400 && unknown?.code == "invalid_field")
        #expect(unknown?.fields?.map(\.field) == ["taggedUsernames"])
        #expect(unknown?.fields?.first?.message == "unknown: ghost, nobody")
        // An account AuthService knows but the replica has not seen yet is not unknown.
        try await f.auth.register("late", publish: false)
        let tagged = try await f.post(a, tagged: ["late"])
        #expect(tagged.taggedUsers.map(\.username) == ["late"])
        let many = await serviceError { try await f.post(a, tagged: (0..<21).map { "user\($0)" }) }
        #expect(many?.fields?.map(\.code) == ["too_many"])
        #expect(await serviceError { try await f.post(Me.unknown, tagged: []) }?.status == 404)
    }

    @Test func theLongestCaptionAndAVideoAreAccepted() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let video = try await f.call(
            Profile.CreatePost.self,
            .init(
                ownerId: a.id, postType: "video", mediaURL: "http://x.example/v.mp4", thumbnailURL: "https://x.example/t.jpg",
                caption: String(repeating: "c", count: 2_200), taggedUsernames: []))
        #expect(video.postType == "video" && video.caption.count == 2_200 && video.likeCount == 0 && !video.likedByMe)
        #expect(video.owner.username == "alice" && video.id.count == 32 && video.createdAt.hasSuffix("Z"))
        let created = try await f.events(Profile.PostCreated.self)
        #expect(created.count == 1 && created.first?.postId == video.id && created.first?.thumbnailURL == video.thumbnailURL)
        #expect(created.first?.owner == video.owner)
    }

    @Test func taggedUsersResolveCaseInsensitivelyAndShowInTheTaggedTab() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob", name: "Bob")
        let c = try await f.register("carol")
        let post = try await f.post(a, caption: "with friends", tagged: ["BOB", " carol ", "bob"])
        #expect(post.taggedUsers.map(\.username) == ["bob", "carol"])
        #expect(post.taggedUsers[0].name == "Bob")
        #expect(try await f.allPosts(a, "bob", tagged: true).map(\.id) == [post.id])
        #expect(try await f.allPosts(a, "carol", tagged: true).map(\.id) == [post.id])
        #expect(try await f.allPosts(a, "alice", tagged: true).isEmpty)
        #expect(try await f.allPosts(c, "bob").isEmpty)
        let fetched = try await f.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id))
        #expect(fetched == post)
        let events = try await f.events(Profile.PostCreated.self)
        #expect(try await f.eventTypes() == [Profile.PostCreated.type])
        #expect(events.first?.taggedUserIds == [b.id, c.id] && events.first?.ownerId == a.id)
        #expect(events.first?.postId == post.id && events.first?.createdAt == post.createdAt)
    }

    @Test func gridIsNewestFirstAndPagesWithOpaqueCursors() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        var ids: [String] = []
        for i in 0..<7 { ids.append(try await f.post(a, caption: "\(i)").id) }
        let first = try await f.postsPage(a, "ALICE", limit: 3)
        #expect(first.items.map(\.id) == Array(ids.reversed().prefix(3)))
        #expect(first.nextCursor != nil)
        #expect(try await f.allPosts(a, "alice", limit: 3).map(\.id) == ids.reversed())
        #expect(try await f.allPosts(a, "alice", limit: 7).map(\.id) == ids.reversed())
        #expect(try await f.postsPage(a, "alice", limit: 7).nextCursor == nil)
        #expect(await serviceError { try await f.postsPage(a, "ghost", tagged: true) }?.status == 404)
    }

    /// Paging from a cursor continues strictly after its post, so posts added while a client
    /// pages are never repeated and never make it skip one (they are newer: they only appear
    /// ahead of the rest, on a fresh first page).
    @Test func pagingNeverRepeatsOrSkipsWhilePostsAreAdded() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        var existing: [String] = []
        for _ in 0..<30 { existing.append(try await f.post(a, tagged: ["bob"]).id) }
        for tagged in [false, true] {
            let username = tagged ? "bob" : "alice"
            var seen: [String] = []
            var added: [String] = []
            var cursor: String? = nil
            repeat {
                let page = try await f.postsPage(b, username, tagged: tagged, limit: 4, cursor: cursor)
                seen += page.items.map(\.id)
                cursor = page.nextCursor
                // Between every two pages, two newer posts appear (deterministically interleaved).
                for _ in 0..<2 { added.append(try await f.post(a, tagged: ["bob"]).id) }
            } while cursor != nil
            let before = Array(existing.reversed())
            #expect(seen == before, "every post that existed when paging began, once, newest first")
            #expect(Set(seen).isDisjoint(with: added))
            // A fresh first page starts with the newest of the added ones.
            #expect(try await f.postsPage(b, username, tagged: tagged, limit: 1).items.map(\.id) == [added.last!])
            existing += added
        }
    }

    @Test func onlyTheOwnerDeletesAndEverythingGoesWithThePost() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        let post = try await f.post(a, tagged: ["bob"])
        let keep = try await f.post(a)
        _ = try await f.call(Profile.SetLike.self, .init(userId: b.id, postId: post.id, liked: true))
        _ = try await f.app.engagement.addComment(.init(userId: b.id, postId: post.id, text: "nice"))

        let forbidden = await serviceError { try await f.call(Profile.DeletePost.self, .init(userId: b.id, postId: post.id)) }
        #expect(forbidden?.status == 403 && forbidden?.code == "forbidden")
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id)).likeCount == 1)

        _ = try await f.call(Profile.DeletePost.self, .init(userId: a.id, postId: post.id))
        #expect(
            await serviceError { try await f.call(Profile.GetPost.self, .init(viewerId: a.id, postId: post.id)) }?.status == 404)
        #expect(
            await serviceError { try await f.call(Profile.DeletePost.self, .init(userId: a.id, postId: post.id)) }?.status == 404)
        #expect(
            await serviceError { try await f.call(Profile.ListComments.self, .init(postId: post.id, page: .init())) }?.status
                == 404)
        #expect(
            await serviceError { try await f.call(Profile.ListLikes.self, .init(postId: post.id, page: .init())) }?.status == 404)
        #expect(try await f.allPosts(a, "bob", tagged: true).isEmpty)
        #expect(try await f.allPosts(a, "alice").map(\.id) == [keep.id])
        #expect(try await f.app.profiles.header("alice").postCount == 1)
        let rows = try await f.database.read { c in
            try ["likes", "comments", "post_tags"].map { try c.scalar("SELECT COUNT(*) FROM \(unescaped: $0)") ?? -1 }
        }
        #expect(rows == [0, 0, 0])
        let deleted = try await f.events(Profile.PostDeleted.self)
        #expect(deleted.map(\.postId) == [post.id] && deleted.map(\.ownerId) == [a.id])
        #expect(try await f.eventTypes().last == Profile.PostDeleted.type)
    }
}
