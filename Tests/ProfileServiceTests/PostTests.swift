import Foundation
import Shared
import TestSupport
import Testing

/// Posts: validation, tags, the grid and tagged tab with cursor paging, owner-only delete.
@Suite struct PostTests {
    @Test func createPostValidatesEveryField() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let error = await serviceError {
            try await h.profile.call(
                Profile.CreatePost.self,
                .init(
                    ownerId: a.id, postType: "gif", mediaURL: "cdn/relative.jpg", thumbnailURL: "ftp://cdn.example.com/t.jpg",
                    caption: String(repeating: "c", count: 2_201), taggedUsernames: ["ghost"]))
        }
        #expect(error?.status == 400)
        let codes = Dictionary(uniqueKeysWithValues: (error?.fields ?? []).map { ($0.field, $0.code) })
        #expect(codes["postType"] == "invalid_post_type")
        #expect(codes["mediaURL"] == "invalid_url" && codes["thumbnailURL"] == "invalid_url")
        #expect(codes["caption"] == "too_long")
        #expect(codes["taggedUsernames"] == "unknown_user")
        let unknownOnly = await serviceError {
            try await h.profile.call(
                Profile.CreatePost.self,
                .init(
                    ownerId: a.id, postType: "photo", mediaURL: "https://x.example/m.jpg",
                    thumbnailURL: "https://x.example/t.jpg",
                    caption: nil, taggedUsernames: ["alice", "ghost"]))
        }
        #expect(unknownOnly?.code == "unknown_user" && unknownOnly?.fields?.first?.field == "taggedUsernames")
        #expect(try await h.profile.call(Profile.Header.self, .init(username: "alice")).postCount == 0)
        // The longest caption and a video are fine.
        let video = try await h.profile.call(
            Profile.CreatePost.self,
            .init(
                ownerId: a.id, postType: "video", mediaURL: "http://x.example/v.mp4", thumbnailURL: "https://x.example/t.jpg",
                caption: String(repeating: "c", count: 2_200), taggedUsernames: []))
        #expect(video.postType == "video" && video.caption.count == 2_200 && video.likeCount == 0 && !video.likedByMe)
        #expect(video.owner.username == "alice" && video.id.count == 32)
    }

    @Test func taggedUsersResolveCaseInsensitivelyAndShowInTheTaggedTab() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let b = try await h.register("bob", name: "Bob")
        let c = try await h.register("carol")
        let post = try await h.post(a, caption: "with friends", tagged: ["BOB", "carol", "bob"])
        #expect(post.taggedUsers.map(\.username) == ["bob", "carol"])
        #expect(post.taggedUsers[0].name == "Bob")
        #expect(try await h.allPosts(a, "bob", tagged: true).map(\.id) == [post.id])
        #expect(try await h.allPosts(a, "carol", tagged: true).map(\.id) == [post.id])
        #expect(try await h.allPosts(a, "alice", tagged: true).isEmpty)
        #expect(try await h.allPosts(c, "bob").isEmpty)
        let fetched = try await h.profile.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id))
        #expect(fetched == post)
        let created = try await h.eventTypes()
        #expect(created == [Profile.PostCreated.type])
        let replay = try await h.profile.call(Ops.Replay.self, .init(after: 0, limit: 10))
        let event = try WireJSON.decode(EventEnvelope<Profile.PostCreated>.self, from: Array(replay.events[0].utf8)).body
        #expect(event.taggedUserIds == [b.id, c.id] && event.ownerId == a.id && event.postId == post.id)
    }

    @Test func gridIsNewestFirstAndPagesWithOpaqueCursors() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        var ids: [String] = []
        for i in 0..<7 { ids.append(try await h.post(a, caption: "\(i)").id) }
        let first = try await h.profile.call(
            Profile.ListPosts.self, .init(viewerId: a.id, username: "alice", tagged: false, page: .init(limit: 3)))
        #expect(first.items.map(\.id) == Array(ids.reversed().prefix(3)))
        #expect(first.nextCursor != nil)
        #expect(try await h.allPosts(a, "alice", limit: 3).map(\.id) == ids.reversed())
        #expect(try await h.allPosts(a, "alice", limit: 7).map(\.id) == ids.reversed())
        let exact = try await h.profile.call(
            Profile.ListPosts.self, .init(viewerId: a.id, username: "alice", tagged: false, page: .init(limit: 7)))
        #expect(exact.nextCursor == nil)
        for bad in ["abc", "-1", "0", ""] {
            let e = await serviceError {
                try await h.profile.call(
                    Profile.ListPosts.self,
                    .init(viewerId: a.id, username: "alice", tagged: false, page: .init(limit: 3, cursor: bad)))
            }
            #expect(e?.status == 400 && e?.code == "invalid_cursor", "\(bad)")
        }
        let unknown = await serviceError {
            try await h.profile.call(
                Profile.ListPosts.self, .init(viewerId: a.id, username: "ghost", tagged: true, page: .init()))
        }
        #expect(unknown?.status == 404)
    }

    @Test func pagingNeverRepeatsOrSkipsWhilePostsAreAdded() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let b = try await h.register("bob")
        var existing: [String] = []
        for _ in 0..<30 { existing.append(try await h.post(a, tagged: ["bob"]).id) }
        for tagged in [false, true] {
            let username = tagged ? "bob" : "alice"
            let writer = Task {
                var added: [String] = []
                for _ in 0..<20 { added.append(try await h.post(a, tagged: ["bob"]).id) }
                return added
            }
            var seen: [String] = []
            var cursor: String? = nil
            repeat {
                let page = try await h.profile.call(
                    Profile.ListPosts.self,
                    .init(viewerId: b.id, username: username, tagged: tagged, page: .init(limit: 4, cursor: cursor)))
                seen += page.items.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil
            let added = try await writer.value
            #expect(Set(seen).count == seen.count, "no post repeated")
            // Every post that existed when paging began is there, in order; posts added while
            // paging may appear only ahead of them (they are newer), never in between.
            let all = existing.reversed() as [String]
            #expect(seen.filter { all.contains($0) } == all)
            #expect(seen.suffix(all.count) == all[...])
            #expect(seen.allSatisfy { all.contains($0) || added.contains($0) })
            existing += added
        }
    }

    @Test func onlyTheOwnerDeletesAndEverythingGoesWithThePost() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let b = try await h.register("bob")
        let post = try await h.post(a, tagged: ["bob"])
        let keep = try await h.post(a)
        _ = try await h.profile.call(Profile.SetLike.self, .init(userId: b.id, postId: post.id, liked: true))
        _ = try await h.profile.call(Profile.AddComment.self, .init(userId: b.id, postId: post.id, text: "nice"))

        let forbidden = await serviceError {
            try await h.profile.call(Profile.DeletePost.self, .init(userId: b.id, postId: post.id))
        }
        #expect(forbidden?.status == 403 && forbidden?.code == "forbidden")
        #expect(try await h.profile.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id)).likeCount == 1)

        _ = try await h.profile.call(Profile.DeletePost.self, .init(userId: a.id, postId: post.id))
        #expect(
            await serviceError { try await h.profile.call(Profile.GetPost.self, .init(viewerId: a.id, postId: post.id)) }?.status
                == 404)
        #expect(
            await serviceError { try await h.profile.call(Profile.DeletePost.self, .init(userId: a.id, postId: post.id)) }?.status
                == 404)
        let comments = await serviceError {
            try await h.profile.call(Profile.ListComments.self, .init(postId: post.id, page: .init()))
        }
        #expect(comments?.status == 404)
        #expect(try await h.allPosts(a, "bob", tagged: true).isEmpty)
        #expect(try await h.allPosts(a, "alice").map(\.id) == [keep.id])
        #expect(try await h.profile.call(Profile.Header.self, .init(username: "alice")).postCount == 1)
        let types = try await h.eventTypes()
        #expect(types.last == Profile.PostDeleted.type)
    }
}
