import BackendKit
import Foundation
import Harness
import Messages
import Storage
import Support
import TestSupport
import Testing

/// What only the real ProfileService process shows: its replica following AuthService's events
/// across a restart, its state surviving a crash, its events reaching a subscriber. AuthService
/// is an in-process stand-in; every wait is for a condition, with a generous deadline.
@Suite(.serialized, .timeLimit(.minutes(5))) struct ProcessTests {
    /// Registers `identity` with ProfileService as the gateway does.
    func createProfile(_ h: ProfileProcessHarness, _ identity: Identity, name: String? = nil) async throws -> Me {
        try await h.profile.call(Profile.CreateProfile.self, .init(identity: identity, name: name, birthDate: nil, gender: nil))
    }

    /// Events AuthService published while ProfileService was stopped are applied once it is back
    /// — each exactly once (the subscriber's cursor was stored with the changes, so the events
    /// from before the stop are not applied again) — and it goes on following live events.
    /// Lookups find nobody here: only the events can tell ProfileService anything.
    @Test func theReplicaFollowsAuthServiceAcrossARestartApplyingEachEventOnce() async throws {
        let h = try await ProfileProcessHarness.start(answerLookups: false)
        let alice = try await h.auth.register("alice")
        try await eventually("ProfileService applied alice's registration") {
            (try? await h.profile.call(Profile.GetMe.self, .init(userId: alice.id))) != nil
        }
        _ = try await h.profile.call(Profile.UpdateMe.self, .init(userId: alice.id, name: "Alice"))
        try await eventually("the subscriber counted alice's registration") {
            try await h.counter("subscriber.auth.delivered") >= 1
        }
        #expect(try await h.counter("subscriber.auth.delivered") == 1)

        try await h.stop()
        try await h.auth.rename(alice.id, to: "alice.renamed")
        // The freed name goes to a new account while ProfileService is down.
        let bob = try await h.auth.register("alice")
        try await h.restart()

        try await eventually("ProfileService applied the rename and the new registration") {
            let me = try? await h.profile.call(Profile.GetMe.self, .init(userId: alice.id))
            let header = try? await h.profile.call(Profile.Header.self, .init(username: "alice"))
            return me?.username == "alice.renamed" && header?.user.id == bob.id
        }
        #expect(try await h.profile.call(Profile.GetMe.self, .init(userId: alice.id)).name == "Alice")
        try await eventually("the subscriber counted what it applied") {
            try await h.counter("subscriber.auth.delivered") >= 2
        }
        #expect(try await h.counter("subscriber.auth.delivered") == 2, "only the two events missed while down")
        let head = try await h.auth.head()
        #expect(try h.readDatabase { try $0.scalar("SELECT seq FROM event_cursor WHERE producer = 'auth'") } == head)

        // Live events after the restart are followed too.
        try await h.auth.rename(bob.id, to: "bob")
        try await eventually("ProfileService applied bob's rename") {
            (try? await h.profile.call(Profile.Header.self, .init(username: "bob")))?.user.id == bob.id
        }
        try await eventually("the subscriber counted bob's rename") {
            try await h.counter("subscriber.auth.delivered") >= 3
        }
        #expect(try await h.counter("subscriber.auth.delivered") == 3)
    }

    /// Everything a client did before ProfileService was killed (SIGKILL, no shutdown) is there
    /// after it comes back: profiles, settings, posts with tags, likes, comments, counters, the
    /// outbox (sequence numbers go on, never reused), and a cursor handed out before the crash
    /// still pages the same list.
    @Test func stateSurvivesACrash() async throws {
        let h = try await ProfileProcessHarness.start()
        let alice = try await createProfile(h, try await h.auth.register("alice"), name: "Alice")
        let bob = try await createProfile(h, try await h.auth.register("bob"))
        let me = try await h.profile.call(
            Profile.UpdateMe.self,
            .init(
                userId: alice.id, bio: "two\nlines", profilePhotoURL: "https://cdn.example.com/a.jpg", phone: "+1 555 0101",
                gender: "female", birthDate: "1990-02-28"))
        _ = try await h.profile.call(Profile.UpdateSettings.self, .init(userId: alice.id, saveOriginalPosts: true))
        var posts: [Profile.Post] = []
        for i in 0..<4 {
            posts.append(
                try await h.profile.call(
                    Profile.CreatePost.self,
                    .init(
                        ownerId: alice.id, postType: "photo", mediaURL: "https://cdn.example.com/\(i).jpg",
                        thumbnailURL: "https://cdn.example.com/t\(i).jpg", caption: "post \(i)\nsecond line",
                        taggedUsernames: ["bob"])))
        }
        _ = try await h.profile.call(Profile.SetLike.self, .init(userId: bob.id, postId: posts[0].id, liked: true))
        let comment = try await h.profile.call(Profile.AddComment.self, .init(userId: bob.id, postId: posts[0].id, text: "nice"))
        let firstPage = try await h.profile.call(
            Profile.ListPosts.self, .init(viewerId: bob.id, username: "alice", tagged: false, page: .init(limit: 2)))
        let cursor = try #require(firstPage.nextCursor)
        let secondPage = try await h.profile.call(
            Profile.ListPosts.self,
            .init(viewerId: bob.id, username: "alice", tagged: false, page: .init(limit: 2, cursor: cursor)))
        let headBefore = try await h.profile.call(Ops.Replay.self, .init(after: 0, limit: 0)).head

        await h.crash()
        try await h.restart()

        #expect(try await h.profile.call(Profile.GetMe.self, .init(userId: alice.id)) == me)
        let settings = try await h.profile.call(Profile.GetSettings.self, .init(userId: alice.id))
        #expect(settings.sections[0].items[2].action.value == true)
        let again = try await h.profile.call(
            Profile.ListPosts.self,
            .init(viewerId: bob.id, username: "alice", tagged: false, page: .init(limit: 2, cursor: cursor)))
        #expect(again.items == secondPage.items)
        let grid = try await h.profile.call(
            Profile.ListPosts.self, .init(viewerId: bob.id, username: "alice", tagged: false, page: .init(limit: 10)))
        #expect(grid.items.map(\.id) == posts.reversed().map(\.id))
        #expect(grid.items.last?.likeCount == 1 && grid.items.last?.likedByMe == true && grid.items.last?.commentCount == 1)
        #expect(grid.items.last?.caption == "post 0\nsecond line")
        let tagged = try await h.profile.call(
            Profile.ListPosts.self, .init(viewerId: alice.id, username: "bob", tagged: true, page: .init(limit: 10)))
        #expect(tagged.items.map(\.id) == posts.reversed().map(\.id))
        let comments = try await h.profile.call(Profile.ListComments.self, .init(postId: posts[0].id, page: .init()))
        #expect(comments.items == [comment])
        #expect(try await h.profile.call(Profile.Header.self, .init(username: "alice")).postCount == 4)
        // Writes go on where they stopped: the counter from its stored value, the outbox's
        // sequence after the last one committed before the crash.
        let liked = try await h.profile.call(Profile.SetLike.self, .init(userId: alice.id, postId: posts[0].id, liked: true))
        #expect(liked == .init(liked: true, likeCount: 2))
        let replay = try await h.profile.call(Ops.Replay.self, .init(after: headBefore, limit: 10))
        #expect(replay.head == headBefore + 1 && replay.events.count == 1)
    }

    /// What ProfileService publishes reaches a durable subscriber in another process's shoes
    /// (an `EventSubscriber` on its events endpoint, as NotificationService has): every event,
    /// once, in order, with the bodies the changes announce.
    @Test func publishedEventsReachASubscriber() async throws {
        let h = try await ProfileProcessHarness.start()
        let alice = try await createProfile(h, try await h.auth.register("alice"))
        let bob = try await createProfile(h, try await h.auth.register("bob"))

        let received = Locked<[(seq: Int64, type: String, postId: String?, userId: String?)]>([])
        let consumer = try Database(
            location: try TestStorage.location(h.cluster.dataDirectory, "consumer"), producer: nil, migrations: [])
        let subscriber = EventSubscriber(
            producer: .profile, endpoint: try #require(h.cluster.endpoints["profile"]?["events"]), context: h.zmq,
            replay: h.profile, database: consumer, logger: Logger(service: "test", minimum: .error),
            security: try h.cluster.security(context: h.zmq))
        func record<E: Event>(_ type: E.Type, _ fields: @escaping @Sendable (E) -> (String?, String?)) {
            subscriber.on(type) { event, tx in
                let (postId, userId) = fields(event.body)
                let seq = event.header.seq
                tx.onCommit { received.withLock { $0.append((seq, E.type, postId, userId)) } }
                return .applied
            }
        }
        record(Profile.PostCreated.self) { ($0.postId, $0.ownerId) }
        record(Profile.PostLiked.self) { ($0.postId, $0.userId) }
        record(Profile.PostCommented.self) { ($0.postId, $0.userId) }
        record(Profile.PostUnliked.self) { ($0.postId, $0.userId) }
        record(Profile.ProfileChanged.self) { (nil, "\($0.user.id):\($0.user.name)") }
        record(Profile.PostDeleted.self) { ($0.postId, $0.ownerId) }
        let running = Task { try await subscriber.run() }
        defer { running.cancel() }

        let post = try await h.profile.call(
            Profile.CreatePost.self,
            .init(
                ownerId: alice.id, postType: "photo", mediaURL: "https://cdn.example.com/m.jpg",
                thumbnailURL: "https://cdn.example.com/t.jpg", caption: nil, taggedUsernames: ["bob"]))
        _ = try await h.profile.call(Profile.SetLike.self, .init(userId: bob.id, postId: post.id, liked: true))
        _ = try await h.profile.call(Profile.SetLike.self, .init(userId: bob.id, postId: post.id, liked: true))
        _ = try await h.profile.call(Profile.AddComment.self, .init(userId: bob.id, postId: post.id, text: "hi"))
        _ = try await h.profile.call(Profile.SetLike.self, .init(userId: bob.id, postId: post.id, liked: false))
        _ = try await h.profile.call(Profile.UpdateMe.self, .init(userId: alice.id, name: "Alice"))
        _ = try await h.profile.call(Profile.DeletePost.self, .init(userId: alice.id, postId: post.id))

        try await eventually("the subscriber applied ProfileService's eight events") {
            received.withLock { $0.count } >= 8
        }
        let events = received.withLock { $0 }
        #expect(events.map(\.seq) == Array(Int64(1)...8))
        // The two new profiles first (`profile.user.changed`: NotificationService shows actors
        // from these), then what the calls changed.
        #expect(
            events.map(\.type) == [
                Profile.ProfileChanged.type, Profile.ProfileChanged.type, Profile.PostCreated.type, Profile.PostLiked.type,
                Profile.PostCommented.type, Profile.PostUnliked.type, Profile.ProfileChanged.type, Profile.PostDeleted.type,
            ])
        #expect(events.map(\.postId) == [nil, nil, post.id, post.id, post.id, post.id, nil, post.id])
        #expect(events.prefix(2).map { $0.userId?.components(separatedBy: ":").first } == [alice.id, bob.id])
        #expect(events.dropFirst(2).map(\.userId) == [alice.id, bob.id, bob.id, bob.id, "\(alice.id):Alice", alice.id])
    }
}
