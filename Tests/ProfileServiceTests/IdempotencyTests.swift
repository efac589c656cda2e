import Foundation
import Messages
import Support
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// `Idempotency-Key` handling in ProfileService (draft-ietf-httpapi-idempotency-key-header-07,
/// API.md "Idempotent writes") through the registered handlers on a temp database of the test
/// engine (`TEST_STORAGE_ENGINE`): one write per user and key, the first reply again, 422 for a
/// different request, 409 while the first is in flight, records forgotten after 24 h and purged.
@Suite struct IdempotencyTests {
    static func postRequest(_ owner: Me, caption: String = "first", key: String?) -> Profile.CreatePost.Request {
        .init(
            ownerId: owner.id, postType: "photo", mediaURL: "https://cdn.example.com/m/1.jpg",
            thumbnailURL: "https://cdn.example.com/t/1.jpg", caption: caption, taggedUsernames: [], idempotencyKey: key)
    }

    static func expectError(
        _ error: ServiceError?, _ status: Int, _ code: ServiceErrorCode, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            error?.status == status && error?.errorCode == code, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.message.contains("Idempotency-Key") == true, sourceLocation: sourceLocation)
    }

    @Test func theSameKeyTwiceMakesOnePostAndAnswersWithTheFirst() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        let first = try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: "k-1"))
        // Changes after the first reply do not change the replayed one: it is the first reply.
        _ = try await f.call(Profile.SetLike.self, .init(userId: b.id, postId: first.id, liked: true))
        let again = try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: "k-1"))
        #expect(again == first && again.likeCount == 0)
        #expect(try await f.allPosts(a, "alice").map(\.id) == [first.id])
        #expect(try await f.events(Profile.PostCreated.self).map(\.postId) == [first.id])
    }

    @Test func theKeyWithADifferentRequestIs422AndWritesNothing() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let first = try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: "k-1"))
        let caption = await serviceError {
            try await f.call(Profile.CreatePost.self, Self.postRequest(a, caption: "edited", key: "k-1"))
        }
        Self.expectError(caption, 422, .idempotencyKeyReused)
        // Another operation with the key is another request too.
        let comment = await serviceError {
            try await f.call(Profile.AddComment.self, .init(userId: a.id, postId: first.id, text: "hi", idempotencyKey: "k-1"))
        }
        Self.expectError(comment, 422, .idempotencyKeyReused)
        #expect(try await f.allPosts(a, "alice").map(\.id) == [first.id])
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: a.id, postId: first.id)).commentCount == 0)
        #expect(try await f.eventTypes() == [Profile.PostCreated.type])
    }

    @Test func withoutAKeyEachRequestIsANewPost() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let one = try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: nil))
        let two = try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: nil))
        #expect(one.id != two.id)
        #expect(try await f.allPosts(a, "alice").count == 2)
    }

    @Test func keysArePerUser() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        let mine = try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: "shared-key"))
        let theirs = try await f.call(Profile.CreatePost.self, Self.postRequest(b, key: "shared-key"))
        #expect(mine.id != theirs.id && theirs.owner.id == b.id)
        #expect(try await f.allPosts(a, "bob").map(\.id) == [theirs.id])
        #expect(try await f.call(Profile.CreatePost.self, Self.postRequest(b, key: "shared-key")) == theirs)
    }

    @Test func aCommentWithTheSameKeyIsAddedOnce() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        let post = try await f.post(a)
        let other = try await f.post(a)
        let request = Profile.AddComment.Request(userId: b.id, postId: post.id, text: "nice", idempotencyKey: "c-1")
        let first = try await f.call(Profile.AddComment.self, request)
        #expect(try await f.call(Profile.AddComment.self, request) == first)
        let page = try await f.call(Profile.ListComments.self, .init(postId: post.id, page: .init()))
        #expect(page.items.map(\.id) == [first.id])
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id)).commentCount == 1)
        #expect(try await f.events(Profile.PostCommented.self).count == 1)
        // The same text on another post is another request (the post id is part of it).
        var elsewhere = request
        elsewhere.postId = other.id
        Self.expectError(await serviceError { try await f.call(Profile.AddComment.self, elsewhere) }, 422, .idempotencyKeyReused)
    }

    @Test func aFailedRequestLeavesItsKeyFree() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        var bad = Self.postRequest(a, key: "k-1")
        bad.postType = "gif"
        #expect(await serviceError { try await f.call(Profile.CreatePost.self, bad) }?.status == 400)
        let post = try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: "k-1"))
        #expect(try await f.allPosts(a, "alice").map(\.id) == [post.id])
    }

    @Test func aMalformedKeyIs400NamingTheHeader() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        for (key, code) in [
            ("", "empty"), (String(repeating: "k", count: 256), "too_long"), ("caf\u{E9}", "invalid_field"),
            ("a\tb", "invalid_field"),
        ] {
            let error = await serviceError { try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: key)) }
            #expect(
                error?.status == 400 && error?.fields?.map(\.field) == ["Idempotency-Key"] && error?.fields?.first?.code == code)
        }
        #expect(
            try await f.call(Profile.CreatePost.self, Self.postRequest(a, key: String(repeating: "k", count: 255))).caption
                == "first")
        #expect(try await f.allPosts(a, "alice").count == 1)
    }

    /// A second request while the first is in flight in this process: 409, or 422 when it is
    /// another request; once the first has finished, its reply.
    @Test func aKeyWhoseFirstRequestIsInFlightIs409() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let writes = IdempotentWrites(store: SQLIdempotencyStore(database: f.database))
        let request = Self.postRequest(a, key: "k-1")
        let (entered, enter) = AsyncStream<Void>.makeStream()
        let (gate, open) = AsyncStream<Void>.makeStream()
        let app = f.app
        let first = Task {
            try await writes.run(
                userId: a.id, key: "k-1", fingerprint: { try RequestFingerprint.of(Profile.CreatePost.self, request) },
                write: { claim in
                    enter.yield()
                    for await _ in gate { break }
                    return try await app.posts.createPost(request, idempotency: claim)
                })
        }
        for await _ in entered { break }
        let same = await serviceError {
            try await writes.run(
                userId: a.id, key: "k-1", fingerprint: { try RequestFingerprint.of(Profile.CreatePost.self, request) },
                write: { _ -> String in
                    Issue.record("ran twice")
                    return "ran"
                })
        }
        #expect(same?.status == 409 && same?.errorCode == .idempotencyKeyInUse && same?.retryAfter == 1)
        let other = await serviceError {
            try await writes.run(
                userId: a.id, key: "k-1", fingerprint: { "another" },
                write: { _ -> String in
                    Issue.record("ran twice")
                    return "ran"
                })
        }
        #expect(other?.status == 422 && other?.errorCode == .idempotencyKeyReused)
        // Another user's key of the same text is not in flight.
        let b = try await f.register("bob")
        let bobs = try await writes.run(userId: b.id, key: "k-1", fingerprint: { "b" }, write: { _ in "ran" })
        #expect(bobs == "ran")
        open.yield()
        let post = try await first.value
        let replay: Profile.Post = try await writes.run(
            userId: a.id, key: "k-1", fingerprint: { try RequestFingerprint.of(Profile.CreatePost.self, request) },
            write: { _ in
                Issue.record("ran twice")
                return post
            })
        #expect(replay == post)
    }

    /// Two replicas taking the same key at once: the write that commits second finds the first's
    /// record in its own transaction and is rolled back with 409 (nothing of it stays).
    @Test func aKeyCommittedMeanwhileRollsTheSecondWriteBack() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let store = SQLIdempotencyStore(database: f.database)
        let now = Timestamp.nowMs()
        let claim = IdempotencyClaim(userId: a.id, key: "k-1", fingerprint: "f", nowMs: now)
        try await store.save(claim, reply: "{}")
        let error = await serviceError {
            try await f.app.posts.createPost(Self.postRequest(a, key: "k-1"), idempotency: claim)
        }
        #expect(error?.status == 409 && error?.errorCode == .idempotencyKeyInUse)
        #expect(try await f.allPosts(a, "alice").isEmpty)
        #expect(try await f.eventTypes().isEmpty)
    }

    /// A record is the key's for 24 h: then a request with it is new again (the record replaced),
    /// and the purge deletes records past the 24 h.
    @Test func aRecordIsForgottenAfter24HoursAndPurged() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let store = SQLIdempotencyStore(database: f.database)
        let clock = Locked<Int64>(1_000_000)
        let writes = IdempotentWrites(store: store, nowMs: { clock.withLock { $0 } })
        let request = Self.postRequest(a, key: "k-1")
        let app = f.app
        @Sendable func create() async throws -> Profile.Post {
            try await writes.run(
                userId: a.id, key: "k-1", fingerprint: { try RequestFingerprint.of(Profile.CreatePost.self, request) },
                write: { claim in try await app.posts.createPost(request, idempotency: claim) })
        }
        let first = try await create()
        clock.withLock { $0 += IdempotencyKey.retentionMs - 1 }
        #expect(try await create() == first)
        clock.withLock { $0 += 1 }
        let second = try await create()
        #expect(second.id != first.id)
        #expect(try await create() == second)
        #expect(
            try await store.record(userId: a.id, key: "k-1", nowMs: clock.withLock { $0 })?.createdMs == 1_000_000
                + IdempotencyKey.retentionMs)

        try await store.save(IdempotencyClaim(userId: a.id, key: "old", fingerprint: "f", nowMs: 5), reply: "{}")
        let purge = IdempotencyPurge(store: store, intervalMs: 60_000, logger: Logger(service: "test", minimum: .error), batch: 1)
        // At 24 h after the first record: the one made at 5 ms and the first are due, the second not.
        #expect(await purge.purge(nowMs: 1_000_000 + IdempotencyKey.retentionMs) == 1)
        #expect(await purge.purge(nowMs: 1_000_000 + 2 * IdempotencyKey.retentionMs - 1) == 0)
        #expect(try await store.record(userId: a.id, key: "k-1", nowMs: clock.withLock { $0 }) != nil)
        #expect(await purge.purge(nowMs: 1_000_000 + 2 * IdempotencyKey.retentionMs) == 1)
        #expect(try await store.record(userId: a.id, key: "k-1", nowMs: clock.withLock { $0 }) == nil)
        #expect(try await f.allPosts(a, "alice").count == 2)
    }

    /// An upload with a key is processed once: the repeat gets the first `Media` without a new
    /// claim of its row; other bytes or another declared type with the key are 422.
    @Test func anUploadWithTheSameKeyIsProcessedOnce() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let jpeg = try MediaFiles.jpeg(width: 64, height: 48)
        let request = Profile.UploadMedia.Request(ownerId: a.id, contentType: "image/jpeg", idempotencyKey: "u-1")
        let first = try await f.app.media.keyedUpload(request, bytes: jpeg)
        let claimed = try await f.app.media.records.owned(id: first.id, ownerId: a.id)
        #expect(try await f.app.media.keyedUpload(request, bytes: jpeg) == first)
        #expect(try await f.app.media.records.owned(id: first.id, ownerId: a.id) == claimed)
        let png = try MediaFiles.png(width: 64, height: 48)
        Self.expectError(
            await serviceError { try await f.app.media.keyedUpload(request, bytes: png) }, 422, .idempotencyKeyReused)
        var retyped = request
        retyped.contentType = "image/png"
        Self.expectError(
            await serviceError { try await f.app.media.keyedUpload(retyped, bytes: jpeg) }, 422, .idempotencyKeyReused)
        // A post from it with a key, twice: one post.
        let post = Profile.CreateMediaPost.Request(
            ownerId: a.id, postType: "photo", mediaId: first.id, caption: nil, taggedUsernames: [], idempotencyKey: "p-1")
        let made = try await f.call(Profile.CreateMediaPost.self, post)
        #expect(try await f.call(Profile.CreateMediaPost.self, post) == made)
        #expect(try await f.allPosts(a, "alice").map(\.id) == [made.id])
    }
}
