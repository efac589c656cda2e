import Foundation
import Harness
import Messages
import Storage
import Wire

@testable import NotificationService

/// A small social graph around one account, `subject`, holding every kind of row
/// NotificationService keeps about an account, both ways, beside rows of other users that do not
/// involve it: what the suspension, erasure and race tests start from (`make`).
///
/// - follows: alice and bob follow the subject (new posts on), the subject follows alice (new
///   posts on) and carol; carol follows alice, dave follows bob (others' edges);
/// - pat is private: the subject and dave asked to follow her; the subject turns private
///   afterwards and erin asks to follow it;
/// - the subject blocks dave, frank blocks the subject; alice mutes the subject, the subject
///   mutes bob;
/// - likes and comments: the subject, carol and bob like alice's `pa1` (one group of three), the
///   subject and carol comment on it, the subject likes bob's `pb1` (a group of one) and likes
///   then unlikes `pb2` (a push dedup key); alice likes and carol comments on the subject's `pu1`,
///   alice likes then unlikes `pu0`;
/// - posts: the subject posts `pu1` tagging alice (a tag, and a fan-out to alice and bob); alice
///   posts `pa2` (a fan-out to the subject);
/// - devices and pushes: the subject's and alice's devices (queued pushes, sessions), the
///   subject's push preferences; the profile replica has the subject's public fields;
/// - the merger ran once midway: notifications are in both tables; alice read part of hers.
struct AccountWorld {
    let service: InProcessService
    let feed: ProfileFeed
    let subject: Identity
    let alice: Identity
    let bob: Identity
    let carol: Identity
    let dave: Identity
    let erin: Identity
    let frank: Identity
    let pat: Identity

    /// Everyone but the subject.
    var others: [Identity] { [alice, bob, carol, dave, erin, frank, pat] }

    /// Builds the world on a new service whose account worker takes `accountBatch` rows a batch.
    static func make(accountBatch: Int = 3) async throws -> AccountWorld {
        let clock = TestClock()
        let service = try await InProcessService(
            accountBatch: accountBatch, push: (transport: RecordingTransport(), queue: clock.queue()))
        let feed = try await ProfileFeed(into: service)
        let users = try await service.users(["subject", "alice", "bob", "carol", "dave", "erin", "frank", "pat"])
        let world = AccountWorld(
            service: service, feed: feed, subject: users[0], alice: users[1], bob: users[2], carol: users[3],
            dave: users[4], erin: users[5], frank: users[6], pat: users[7])
        try await world.populate()
        return world
    }

    func stop() {
        feed.stop()
        service.stop()
    }

    /// A user's public fields as ProfileService sends them.
    func profile(_ user: Identity, isPrivate: Bool = false) -> PublicUser {
        PublicUser(
            id: user.id, username: user.username, name: user.username.capitalized, bio: "bio of \(user.username)",
            profilePhotoURL: "https://img.example/\(user.username).jpg", isPrivate: isPrivate)
    }

    func comment(_ by: Identity, on owner: Identity, post: String, id: String) async throws {
        try await feed.emit(
            Profile.PostCommented(
                postId: post, ownerId: owner.id, userId: by.id, commentId: id, text: "nice \(id)",
                thumbnailURL: "https://img.example/\(post).jpg"))
    }

    func post(_ id: String, by owner: Identity, tagging: [Identity] = []) async throws {
        try await feed.emit(
            Profile.PostCreated(
                postId: id, ownerId: owner.id, thumbnailURL: "https://img.example/\(id).jpg",
                taggedUserIds: tagging.map(\.id), createdAt: Timestamp.now(), owner: profile(owner)))
    }

    func block(_ by: Identity, _ target: Identity) async throws {
        _ = try await service.app.graph.safety.setBlock(
            user: UserRef(id: by.id, username: by.username), target: UserRef(id: target.id, username: target.username),
            blocking: true, nowMs: Timestamp.nowMs())
    }

    func mute(_ by: Identity, _ target: Identity) async throws {
        _ = try await service.app.graph.safety.setMute(
            user: UserRef(id: by.id, username: by.username), target: UserRef(id: target.id, username: target.username),
            muting: true, nowMs: Timestamp.nowMs())
    }

    private func populate() async throws {
        let s = service
        let store = s.app.devices.store
        _ = try await store.register(
            .init(userId: subject.id, sessionId: "s-subject", token: testToken(1), environment: "sandbox"))
        _ = try await store.register(.init(userId: alice.id, sessionId: "s-alice", token: testToken(2), environment: "sandbox"))
        _ = try await store.updatePreferences(.init(userId: subject.id, like: false))
        for user in [subject, alice, bob, carol] { try await feed.emit(Profile.ProfileChanged(user: profile(user))) }

        try await s.follow(alice, subject.username, notifyPosts: true)
        try await s.follow(bob, subject.username, notifyPosts: true)
        try await s.follow(subject, alice.username, notifyPosts: true)
        try await s.follow(subject, carol.username)
        try await s.follow(carol, alice.username)
        try await s.follow(dave, bob.username)
        try await feed.emit(Profile.ProfileChanged(user: profile(pat, isPrivate: true)))
        try await s.follow(subject, pat.username)
        try await s.follow(dave, pat.username)

        try await feed.like(subject, alice, post: "pa1")
        try await feed.like(carol, alice, post: "pa1")
        try await comment(subject, on: alice, post: "pa1", id: "c1")
        _ = try await s.app.merger.pass()
        try await feed.like(bob, alice, post: "pa1")
        try await comment(carol, on: alice, post: "pa1", id: "c2")
        try await feed.like(subject, bob, post: "pb1")
        try await feed.like(subject, bob, post: "pb2")
        try await feed.emit(Profile.PostUnliked(postId: "pb2", ownerId: bob.id, userId: subject.id))
        try await feed.like(alice, subject, post: "pu1")
        try await comment(carol, on: subject, post: "pu1", id: "c3")
        try await feed.like(alice, subject, post: "pu0")
        try await feed.emit(Profile.PostUnliked(postId: "pu0", ownerId: subject.id, userId: alice.id))
        try await post("pu1", by: subject, tagging: [alice])
        try await post("pa2", by: alice)

        try await feed.emit(Profile.ProfileChanged(user: profile(subject, isPrivate: true)))
        try await s.follow(erin, subject.username)
        try await block(subject, dave)
        try await block(frank, subject)
        try await mute(alice, subject)
        try await mute(subject, bob)
        // Alice has read her older notifications, not the newer.
        let hers = try await s.allNotifications(alice)
        _ = try await s.markRead(alice, upTo: hers[hers.count / 2].seq)
    }
}
