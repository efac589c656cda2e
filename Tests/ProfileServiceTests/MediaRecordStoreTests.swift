import Foundation
import Support
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// The media rows and the collector's decisions on a temp database, with the clock passed in: a
/// fresh unused upload waits out its grace period, a used one waits for its release, the same bytes
/// from two users are kept while either needs them.
@Suite struct MediaRecordStoreTests {
    let grace: Int64 = 1_000

    static func record(_ id: String, _ owner: String) -> MediaRecord {
        MediaRecord(id: id, ownerId: owner, kind: "photo", width: 4, height: 3, durationMs: nil, createdAt: Timestamp.now())
    }

    /// Runs the collector at `nowMs`; returns the ids whose files it removed.
    func collect(_ store: SQLMediaRecordStore, at nowMs: Int64) async throws -> [String] {
        let removed = Locked<[String]>([])
        let rows = try await store.collect(nowMs: nowMs, graceMs: grace, limit: 100) { id in
            removed.withLock { $0.append(id) }
        }
        #expect(rows == removed.withLock { $0 })
        return rows
    }

    @Test func aFreshUnusedUploadIsKeptForItsGracePeriodThenCollected() async throws {
        let f = try await ProfileFixture()
        let store = SQLMediaRecordStore(database: f.database)
        let id = String(repeating: "a", count: 64)
        try await store.claim(Self.record(id, "u1"), nowMs: 10_000, graceMs: grace)
        #expect(try await collect(store, at: 10_999).isEmpty)
        #expect(try await store.exists(id: id))
        #expect(try await collect(store, at: 11_000) == [id])
        #expect(try await !store.exists(id: id))
        #expect(try await collect(store, at: 99_000).isEmpty)
    }

    @Test func theSameBytesFromTwoUsersAreKeptWhileEitherIsFresh() async throws {
        let f = try await ProfileFixture()
        let store = SQLMediaRecordStore(database: f.database)
        let id = String(repeating: "b", count: 64)
        try await store.claim(Self.record(id, "u1"), nowMs: 10_000, graceMs: grace)
        try await store.claim(Self.record(id, "u2"), nowMs: 10_600, graceMs: grace)
        // u1's grace is over, u2's is not: looked at again when u2's ends.
        #expect(try await collect(store, at: 11_000).isEmpty)
        #expect(try await store.owned(id: id, ownerId: "u1") != nil)
        #expect(try await collect(store, at: 11_599).isEmpty)
        #expect(try await collect(store, at: 11_600) == [id])
        #expect(try await store.owned(id: id, ownerId: "u2") == nil)
    }

    @Test func aPostedUploadStaysUntilItsPostIsDeleted() async throws {
        let f = try await ProfileFixture()
        let owner = try await f.register("mediaowner")
        let store = SQLMediaRecordStore(database: f.database)
        let posts = SQLPostStore(database: f.database, mediaReleaseDelayMs: 0)
        let id = String(repeating: "c", count: 64)
        try await store.claim(Self.record(id, owner.id), nowMs: 10_000, graceMs: grace)
        let post = try await posts.create(
            NewPost(
                id: RandomID.make(), ownerId: owner.id, postType: "photo", mediaURL: "/media/\(id)/1080",
                thumbnailURL: "/media/\(id)/square320", caption: "", taggedUserIds: [], createdAt: Timestamp.now(),
                mediaId: id))
        // Someone else's upload cannot be posted.
        await #expect(throws: ServiceError.notFound("media")) {
            _ = try await posts.create(
                NewPost(
                    id: RandomID.make(), ownerId: "someone-else", postType: "photo", mediaURL: "/m", thumbnailURL: "/t",
                    caption: "", taggedUserIds: [], createdAt: Timestamp.now(), mediaId: id))
        }
        #expect(try await collect(store, at: 50_000).isEmpty)  // used by the post, grace or not
        #expect(try await store.exists(id: id))
        try await posts.delete(id: post.id, by: owner.id)
        #expect(try await collect(store, at: Timestamp.nowMs()) == [id])
    }

    @Test func mediaWhoseFilesCannotBeRemovedKeepsItsRowsAndIsRetriedLater() async throws {
        struct Refused: Error {}
        let f = try await ProfileFixture()
        let store = SQLMediaRecordStore(database: f.database)
        let stuck = String(repeating: "d", count: 64)
        let fine = String(repeating: "e", count: 64)
        try await store.claim(Self.record(stuck, "u1"), nowMs: 10_000, graceMs: grace)
        try await store.claim(Self.record(fine, "u1"), nowMs: 10_000, graceMs: grace)
        let removed = try await store.collect(nowMs: 20_000, graceMs: grace, limit: 100) { id in
            if id == stuck { throw Refused() }
        }
        #expect(removed == [fine])
        #expect(try await store.exists(id: stuck))
        #expect(try await collect(store, at: 20_000 + SQLMediaRecordStore.retryDelayMs - 1).isEmpty)
        #expect(try await collect(store, at: 20_000 + SQLMediaRecordStore.retryDelayMs) == [stuck])
    }
}
