import Foundation
import Harness
import Media
import Messages
import Storage
import Support
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// Suspension and deletion in ProfileService (API.md "Account lifecycle and moderation"): what a
/// state hides and what lifting it restores, and the erasure's batches (`AccountEraser`): every
/// row and file of the account gone, other accounts' rows untouched but for the counts the
/// account's likes and comments made, resumable between any two batches. On both engines
/// (`TEST_STORAGE_ENGINE`).
@Suite struct AccountLifecycleTests {
    /// A fixture with a media directory of its own (the erasure removes files).
    static func fixture() async throws -> ProfileFixture {
        var configuration = ProfileConfiguration()
        configuration.mediaDirectory = makeTemporaryDirectory("profile-lifecycle-media")
        configuration.mediaCollectDelayMs = 0
        return try await ProfileFixture(configuration: configuration)
    }

    static func state(_ f: ProfileFixture, _ user: Me, _ state: Auth.AccountState, version: Int64) async throws {
        _ = try await f.call(Profile.ApplyAccountState.self, .init(userId: user.id, state: state, version: version))
    }

    static func like(_ f: ProfileFixture, _ user: Me, _ post: Profile.Post) async throws {
        _ = try await f.call(Profile.SetLike.self, .init(userId: user.id, postId: post.id, liked: true))
    }

    static func comment(_ f: ProfileFixture, _ user: Me, _ post: Profile.Post, _ text: String) async throws {
        _ = try await f.call(Profile.AddComment.self, .init(userId: user.id, postId: post.id, text: text))
    }

    static func header(_ f: ProfileFixture, _ viewer: Me?, _ username: String) async throws -> Profile.Header.Reply {
        try await f.call(Profile.Header.self, .init(username: username, viewerId: viewer?.id))
    }

    @Test func aSuspendedAccountIsHiddenFromOthersAndRestoredWhole() async throws {
        let f = try await Self.fixture()
        let alice = try await f.register("alice")
        let bob = try await f.register("bob")
        let alicePost = try await f.post(alice, caption: "alice's", tagged: ["bob"])
        let bobPost = try await f.post(bob, caption: "bob's", tagged: ["alice"])
        try await Self.like(f, alice, bobPost)
        try await Self.like(f, bob, bobPost)
        try await Self.comment(f, alice, bobPost, "from alice")
        let upload = try await f.app.media.keyedUpload(
            .init(ownerId: alice.id, contentType: "image/jpeg", idempotencyKey: nil),
            bytes: try MediaFiles.jpeg(width: 40, height: 30))
        let readUpload = Profile.ReadMedia.Request(id: upload.id, variant: "square320", offset: 0, length: 0)
        _ = try await f.app.media.read(readUpload)

        try await Self.state(f, alice, .suspended, version: 1)
        #expect(await serviceError { try await Self.header(f, bob, "alice") }?.status == 404)
        #expect(await serviceError { try await Self.header(f, nil, "alice") }?.status == 404)
        #expect(await serviceError { try await f.postsPage(bob, "alice") }?.status == 404)
        #expect(
            await serviceError { try await f.call(Profile.GetPost.self, .init(viewerId: bob.id, postId: alicePost.id)) }?
                .status == 404)
        #expect(await serviceError { try await f.app.media.read(readUpload) }?.status == 404)
        // Out of others' lists: likers, comments, tags, the tagged tab.
        let likers = try await f.call(
            Profile.ListLikes.self, .init(postId: bobPost.id, page: .init(limit: 20), viewerId: bob.id))
        #expect(likers.items.map(\.id) == [bob.id])
        let comments = try await f.call(
            Profile.ListComments.self, .init(postId: bobPost.id, page: .init(limit: 20), viewerId: bob.id))
        #expect(comments.items.isEmpty)
        #expect(try await f.allPosts(bob, "bob").first?.taggedUsers.isEmpty == true)
        #expect(try await f.allPosts(bob, "bob", tagged: true).isEmpty)
        // Nothing new can be aimed at it.
        #expect(await serviceError { try await Self.like(f, bob, alicePost) }?.status == 404)
        // A copy older than the state held changes nothing.
        try await Self.state(f, alice, .active, version: 1)
        #expect(await serviceError { try await Self.header(f, bob, "alice") }?.status == 404)

        try await Self.state(f, alice, .active, version: 2)
        #expect(try await Self.header(f, bob, "alice").user.id == alice.id)
        #expect(try await f.allPosts(bob, "alice").map(\.id) == [alicePost.id])
        #expect(
            try await f.call(Profile.ListLikes.self, .init(postId: bobPost.id, page: .init(limit: 20), viewerId: bob.id))
                .items.map(\.id).sorted() == [alice.id, bob.id].sorted())
        #expect(
            try await f.call(Profile.ListComments.self, .init(postId: bobPost.id, page: .init(limit: 20), viewerId: bob.id))
                .items.map(\.text) == ["from alice"])
        #expect(try await f.allPosts(bob, "bob").first?.taggedUsers.map(\.id) == [alice.id])
        #expect(try await f.allPosts(bob, "bob").first?.likeCount == 2)
        _ = try await f.app.media.read(readUpload)
    }

    /// Every table's rows that name `userId`.
    static func rowsNaming(_ userId: String, on database: Database) async throws -> [String: Int] {
        try await database.read { c in
            var found: [String: Int] = [:]
            for (table, column) in [
                ("profiles", "id"), ("identities", "id"), ("posts", "owner_id"), ("likes", "user_id"),
                ("comments", "user_id"), ("post_tags", "user_id"), ("media", "owner_id"), ("graph_follows", "follower"),
                ("graph_follows", "followee"), ("graph_blocks", "blocker"), ("graph_blocks", "blocked"),
                ("idempotency_keys", "user_id"), ("erasures", "user_id"), ("erasure_media", "user_id"),
            ] {
                let n =
                    try c.scalar(
                        "SELECT count(*) FROM \(unescaped: table) WHERE \(unescaped: column) = \(userId)") ?? 0
                if n > 0 { found["\(table).\(column)"] = Int(n) }
            }
            return found
        }
    }

    /// Everything of other accounts on other accounts' posts and profiles, as strings, counts
    /// left out.
    static func othersRows(_ ids: [String], on database: Database) async throws -> [String] {
        try await database.read { c in
            var rows: [String] = []
            for sql in [
                "SELECT 'post ' || id || ' ' || owner_id || ' ' || caption AS r FROM posts WHERE owner_id IN (\(list: ids))",
                """
                SELECT 'like ' || p.id || ' ' || l.user_id AS r FROM likes l JOIN posts p ON p.seq = l.post_seq
                WHERE l.user_id IN (\(list: ids)) AND p.owner_id IN (\(list: ids))
                """,
                """
                SELECT 'comment ' || m.id || ' ' || m.user_id || ' ' || m.text AS r FROM comments m
                JOIN posts p ON p.seq = m.post_seq WHERE m.user_id IN (\(list: ids)) AND p.owner_id IN (\(list: ids))
                """,
                """
                SELECT 'tag ' || p.id || ' ' || t.user_id AS r FROM post_tags t JOIN posts p ON p.seq = t.post_seq
                WHERE t.user_id IN (\(list: ids)) AND p.owner_id IN (\(list: ids))
                """,
                "SELECT 'profile ' || id || ' ' || name || ' ' || bio AS r FROM profiles WHERE id IN (\(list: ids))",
                "SELECT 'media ' || id || ' ' || owner_id AS r FROM media WHERE owner_id IN (\(list: ids))",
                """
                SELECT 'follow ' || follower || ' ' || followee AS r FROM graph_follows
                WHERE follower IN (\(list: ids)) AND followee IN (\(list: ids))
                """,
            ] as [SQL] {
                rows += try c.query(sql).map { try $0.string("r") }
            }
            return rows.sorted()
        }
    }

    /// Likes, comments and tags whose post is gone.
    static func orphans(on database: Database) async throws -> Int64 {
        try await database.read { c in
            var n: Int64 = 0
            for table in ["likes", "comments", "post_tags"] {
                n +=
                    try c.scalar(
                        "SELECT count(*) FROM \(unescaped: table) WHERE post_seq NOT IN (SELECT seq FROM posts)") ?? 0
            }
            return n
        }
    }

    static func counts(_ f: ProfileFixture, _ post: Profile.Post, _ viewer: Me) async throws -> (Int, Int) {
        let p = try await f.call(Profile.GetPost.self, .init(viewerId: viewer.id, postId: post.id))
        return (p.likeCount, p.commentCount)
    }

    /// Runs `eraser` one batch at a time until it finishes; returns how many batches it took.
    static func finish(_ eraser: AccountEraser, _ userId: String) async throws -> Int {
        var batches = 0
        while true {
            switch try await eraser.step(userId) {
            case .batch: batches += 1
            case .finished: return batches
            case .none:
                Issue.record("no erasure under way for \(userId)")
                return batches
            }
        }
    }

    @Test func aDeletedAccountIsErasedInBatchesAndOnlyOthersCountsChange() async throws {
        let f = try await Self.fixture()
        let alice = try await f.register("alice")
        let bob = try await f.register("bob")
        let carol = try await f.register("carol")
        // Alice's posts, with others' likes, comments and a tag; a media post and a photo.
        var alicePosts: [Profile.Post] = []
        for i in 0..<3 { alicePosts.append(try await f.post(alice, caption: "a\(i)", tagged: ["carol"])) }
        let jpeg = try MediaFiles.jpeg(width: 48, height: 36)
        let upload = try await f.app.media.keyedUpload(
            .init(ownerId: alice.id, contentType: "image/jpeg", idempotencyKey: nil), bytes: jpeg)
        alicePosts.append(
            try await f.call(
                Profile.CreateMediaPost.self,
                .init(
                    ownerId: alice.id, postType: "photo", mediaId: upload.id, caption: nil, taggedUsernames: [],
                    idempotencyKey: "k-1")))
        let photo = try await f.app.media.keyedUpload(
            .init(ownerId: alice.id, contentType: "image/png", idempotencyKey: nil),
            bytes: try MediaFiles.png(width: 30, height: 30))
        _ = try await f.app.media.read(.init(id: photo.id, variant: "square320", offset: 0, length: 0))
        // Bob holds the same bytes as a profile photo of his own: those files stay.
        let shared = try MediaFiles.jpeg(width: 20, height: 20)
        let aliceShared = try await f.app.media.keyedUpload(
            .init(ownerId: alice.id, contentType: "image/jpeg", idempotencyKey: nil), bytes: shared)
        _ = try await f.app.media.keyedUpload(
            .init(ownerId: bob.id, contentType: "image/jpeg", idempotencyKey: nil), bytes: shared)
        for p in alicePosts {
            try await Self.like(f, bob, p)
            try await Self.comment(f, carol, p, "nice")
        }
        // Alice's likes, comments and tags on others' posts.
        let bobPost = try await f.post(bob, caption: "bob", tagged: ["alice", "carol"])
        let carolPost = try await f.post(carol, caption: "carol")
        for p in [bobPost, carolPost] {
            try await Self.like(f, alice, p)
            try await Self.comment(f, alice, p, "hi from alice")
            try await Self.comment(f, alice, p, "again")
            try await Self.like(f, carol, p)
            try await Self.comment(f, bob, p, "bob was here")
        }
        // The follow graph's replica names alice both ways.
        _ = try await f.database.write { tx in
            try Visibility.applyFollow(follower: bob.id, followee: alice.id, following: true, in: tx)
            try Visibility.applyFollow(follower: alice.id, followee: carol.id, following: true, in: tx)
            try Visibility.applyFollow(follower: bob.id, followee: carol.id, following: true, in: tx)
        }
        #expect(try await Self.counts(f, bobPost, bob) == (2, 3))
        let othersBefore = try await Self.othersRows([bob.id, carol.id], on: f.database)
        let files = f.app.media.files

        try await Self.state(f, alice, .deleting, version: 1)
        // At once: 404 to everyone.
        #expect(await serviceError { try await Self.header(f, bob, "alice") }?.status == 404)
        #expect(
            await serviceError { try await f.app.media.read(.init(id: upload.id, variant: "1080", offset: 0, length: 0)) }?.status
                == 404)
        let eraser = AccountEraser(
            database: f.database, files: files, doorbell: Doorbell(), batch: 2, intervalMs: 1_000,
            logger: Logger(service: "test", minimum: .error))
        let batches = try await Self.finish(eraser, alice.id)
        #expect(batches >= 10, "a batch of 2 rows: many batches, got \(batches)")

        #expect(try await Self.rowsNaming(alice.id, on: f.database) == [:])
        for media in [upload.id, photo.id, aliceShared.id] where media != aliceShared.id {
            #expect(try files.variants(of: MediaID(media)!).isEmpty, "files of \(media) removed")
        }
        #expect(try !files.variants(of: MediaID(aliceShared.id)!).isEmpty, "bob's copy keeps the shared files")
        // Others: the same rows, with counts lower by alice's likes and comments.
        #expect(try await Self.othersRows([bob.id, carol.id], on: f.database) == othersBefore)
        #expect(try await Self.orphans(on: f.database) == 0)
        #expect(try await Self.counts(f, bobPost, bob) == (1, 1))
        #expect(try await Self.counts(f, carolPost, carol) == (1, 1))
        // Its events: each post deleted as its owner would, then the step's end, last.
        let types = try await f.eventTypes()
        #expect(types.filter { $0 == Profile.PostDeleted.type }.count == alicePosts.count)
        #expect(types.last == Profile.AccountErased.type)
        #expect(try await f.events(Profile.AccountErased.self) == [.init(userId: alice.id)])
        // NotificationService's end of the saga: the outbox's events naming alice are redacted
        // (windows of 40 seqs), the saga's own two events stay (the second emitted at the end,
        // for AuthService's last step), others' events stay.
        _ = try await f.database.write { tx in try EventRedaction.begin(alice.id, in: tx) }
        #expect(try await eraser.redactEvents(of: alice.id) > 0)
        let outbox = try await f.database.read { c in
            try c.query("SELECT type, body FROM outbox ORDER BY seq").map { (try $0.string("type"), try $0.string("body")) }
        }
        #expect(outbox.filter { $0.1.contains(alice.id) }.map(\.0) == [Profile.AccountErased.type, Profile.AccountRedacted.type])
        #expect(!outbox.contains { $0.1.contains("hi from alice") })
        #expect(outbox.contains { $0.0 == Outbox.redactedType })
        #expect(outbox.contains { $0.1.contains("bob was here") })
        #expect(try await f.database.read { try EventRedaction.next(on: $0) } == nil)
        // Done: nothing more to do, a state that comes late changes nothing, a late follow
        // event brings nothing back.
        #expect(try await eraser.step(alice.id) == .none)
        try await Self.state(f, alice, .active, version: 7)
        _ = try await f.database.write { tx in
            try Visibility.applyFollow(follower: bob.id, followee: alice.id, following: true, in: tx)
        }
        #expect(try await Self.rowsNaming(alice.id, on: f.database) == [:])
        #expect(await serviceError { try await Self.header(f, bob, "alice") }?.status == 404)
    }

    /// A restart between any two batches (a new eraser on the same database) finishes the same
    /// way, and a like that slipped in after the erasure began (a request already under way) is
    /// found and erased with the rest.
    @Test func anErasureResumesAfterAnyBatchAndCatchesLateWrites() async throws {
        let f = try await Self.fixture()
        let alice = try await f.register("alice")
        let bob = try await f.register("bob")
        var bobPosts: [Profile.Post] = []
        for i in 0..<4 { bobPosts.append(try await f.post(bob, caption: "b\(i)")) }
        for p in bobPosts.prefix(3) { try await Self.like(f, alice, p) }
        for i in 0..<3 { _ = try await f.post(alice, caption: "a\(i)") }
        try await Self.state(f, alice, .deleting, version: 1)
        let logger = Logger(service: "test", minimum: .error)
        var total = 0
        for round in 0..<3 {
            // A new eraser each round: the state is read from the rows, never from memory.
            let eraser = AccountEraser(
                database: f.database, files: f.app.media.files, doorbell: Doorbell(), batch: 1, intervalMs: 1_000,
                logger: logger)
            guard case .batch = try await eraser.step(alice.id) else {
                Issue.record("round \(round): expected a batch")
                return
            }
            total += 1
            if round == 1 {
                let late = bobPosts[3].id
                // The fourth like, written past the checks as a request in flight would be.
                _ = try await f.database.write { tx in
                    try tx.query("INSERT INTO likes(post_seq, user_id) SELECT seq, \(alice.id) FROM posts WHERE id = \(late)")
                    try tx.query("UPDATE posts SET like_count = like_count + 1 WHERE id = \(late)")
                }
            }
        }
        let eraser = AccountEraser(
            database: f.database, files: f.app.media.files, doorbell: Doorbell(), batch: 1, intervalMs: 1_000, logger: logger)
        total += try await Self.finish(eraser, alice.id)
        #expect(total == 4 + 3, "one like or one post per batch of 1: 4 likes, 3 posts; got \(total)")
        #expect(try await Self.rowsNaming(alice.id, on: f.database) == [:])
        for p in bobPosts { #expect(try await Self.counts(f, p, bob).0 == 0) }
    }

    /// Reports a deleted account filed stay for the moderators, open or resolved, with their
    /// snapshots, and without the reporter: a phase of the erasure's batches.
    @Test func aDeletedAccountsReportsStayWithoutTheReporter() async throws {
        let f = try await Self.fixture()
        let alice = try await f.register("alice")
        let bob = try await f.register("bob")
        let carol = try await f.register("carol")
        let mod = try await f.register("mod")
        let bobPost = try await f.post(bob, caption: "bob")
        var filed: [Profile.Report] = []
        for (type, id) in [("post", bobPost.id), ("user", bob.id), ("user", carol.id)] {
            filed.append(
                try await f.call(
                    Profile.CreateReport.self,
                    .init(reporterId: alice.id, targetType: type, targetId: id, reason: "spam", comment: "look")
                ).report)
        }
        // Carol's report on bob's post stays hers.
        let carols = try await f.call(
            Profile.CreateReport.self,
            .init(reporterId: carol.id, targetType: "post", targetId: bobPost.id, reason: "spam", comment: nil)
        ).report
        _ = try await f.call(
            Profile.ResolveReport.self, .init(reportId: filed[1].id, moderatorId: mod.id, action: "dismiss", note: nil))

        try await Self.state(f, alice, .deleting, version: 1)
        let eraser = AccountEraser(
            database: f.database, files: f.app.media.files, doorbell: Doorbell(), batch: 2, intervalMs: 1_000,
            logger: Logger(service: "test", minimum: .error))
        var phases: [String] = []
        while case .batch(let phase, _) = try await eraser.step(alice.id) { phases.append(phase) }
        // Three reports in batches of two.
        #expect(phases.filter { $0 == "reports" }.count == 2, "\(phases)")
        #expect(try await eraser.step(alice.id) == .none)
        let left = try await f.database.read { c in
            try c.scalar("SELECT count(*) FROM reports WHERE reporter_id = \(alice.id)") ?? -1
        }
        #expect(left == 0)
        for report in filed {
            let kept = try #require(try await f.app.reports.reports.report(id: report.id))
            #expect(kept.reporter == nil && kept.comment == "look" && kept.target.id == report.target.id)
        }
        #expect(try await f.app.reports.reports.report(id: filed[1].id)?.status == "resolved")
        #expect(try await f.app.reports.reports.report(id: carols.id)?.reporter?.username == "carol")
        // The open ones are still in the moderators' queue.
        let open = try await f.call(
            Profile.ListReports.self, .init(moderatorId: mod.id, status: "open", page: .init()))
        #expect(Set(open.items.map(\.id)) == [filed[0].id, filed[2].id, carols.id])
    }
}
