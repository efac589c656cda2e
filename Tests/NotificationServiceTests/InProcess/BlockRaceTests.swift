import Foundation
import Harness
import Messages
import Storage
import Support
import Testing
import Wire

@testable import NotificationService

/// The block wins its races (issue 39's hostile cases), in process on the engine
/// `TEST_STORAGE_ENGINE` names, made deterministic as `DeviceTrustTests` does: one transaction
/// is held open on one `Database` while the other runs on a second one (another replica), then
/// released. Whichever came first, no follow remains between a blocked pair and nothing the
/// blocked user did is left with the blocker.
@Suite(.serialized)
struct BlockRaceTests {
    static let (alice, bob) = (UserRef(id: "u-alice", username: "alice"), UserRef(id: "u-bob", username: "bob"))

    struct Replicas {
        let directory = makeTemporaryDirectory("block-race")
        let first: Database
        let second: Database

        init() throws {
            first = try TestDatabase.open(in: directory)
            second = try TestDatabase.open(in: directory)
        }

        /// Whether bob follows alice, and what alice has from bob.
        func state() async throws -> (follows: Bool, notifications: Int) {
            try await first.read { c in
                guard let a = try Keys.existingUser(alice.id, on: c), let b = try Keys.existingUser(bob.id, on: c) else {
                    return (false, 0)
                }
                let notes = try c.scalar("SELECT COUNT(*) FROM all_notifications WHERE recipient = \(a) AND actor = \(b)") ?? 0
                return (try Relations.follows(b, a, on: c), Int(notes))
            }
        }

        static var writer: NotificationWriter { NotificationWriter(delivery: .none) }
    }

    /// Alice's block is held open; bob's follow on the other replica waits for it, then finds
    /// alice gone (404), and no follow is made.
    @Test func aFollowWaitingOnABlockIsRefused() async throws {
        let r = try Replicas()
        let release = DispatchSemaphore(value: 0)
        let (started, held) = DeviceTrustTests.hold(r.first, release) { tx in
            _ = try SafetyStore.setBlock(user: Self.alice, target: Self.bob, blocking: true, nowMs: 1, in: tx)
        }
        await onThread { started.wait() }
        let following = Task {
            try await r.second.write { tx in
                try SQLFollowStore.follow(
                    follower: Self.bob, followee: Self.alice, notifyPosts: nil, nowMs: 2, notifications: Replicas.writer,
                    in: tx)
            }
        }
        try await DeviceTrustTests.untilBlocked(r.directory)
        release.signal()
        try await held.value
        let result = await following.result
        #expect(throws: ServiceError.self) { _ = try result.get() }
        #expect(try await r.state() == (false, 0))
    }

    /// Bob's follow is held open (with its follow notification); alice's block on the other
    /// replica waits for it, then ends the follow and removes the notification.
    @Test func aBlockWaitingOnAFollowEndsIt() async throws {
        let r = try Replicas()
        let release = DispatchSemaphore(value: 0)
        let (started, held) = DeviceTrustTests.hold(r.first, release) { tx in
            _ = try SQLFollowStore.follow(
                follower: Self.bob, followee: Self.alice, notifyPosts: nil, nowMs: 1, notifications: Replicas.writer,
                in: tx)
        }
        await onThread { started.wait() }
        let blocking = Task {
            try await r.second.write { tx in
                try SafetyStore.setBlock(user: Self.alice, target: Self.bob, blocking: true, nowMs: 2, in: tx)
            }
        }
        try await DeviceTrustTests.untilBlocked(r.directory)
        release.signal()
        try await held.value
        #expect(try await blocking.value)
        #expect(try await r.state() == (false, 0))
    }

    /// A like's notification from bob, held open; alice's block waits for it and removes it. And
    /// the other way: with the block held, the notification waits, then is not made.
    @Test(arguments: [true, false])
    func aNotificationRacingABlockIsNotLeft(notificationFirst: Bool) async throws {
        let r = try Replicas()
        let like = NewNotification(
            recipientId: Self.alice.id, actorId: Self.bob.id, type: .like, detail: "photo",
            post: .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"), createdAt: 1)
        let notify: @Sendable (Transaction) throws -> Void = { tx in _ = try Replicas.writer.insert(like, in: tx) }
        let block: @Sendable (Transaction) throws -> Void = { tx in
            _ = try SafetyStore.setBlock(user: Self.alice, target: Self.bob, blocking: true, nowMs: 2, in: tx)
        }
        let release = DispatchSemaphore(value: 0)
        let (started, held) = DeviceTrustTests.hold(r.first, release, notificationFirst ? notify : block)
        await onThread { started.wait() }
        let other = Task { try await r.second.write(notificationFirst ? block : notify) }
        try await DeviceTrustTests.untilBlocked(r.directory)
        release.signal()
        try await held.value
        try await other.value
        #expect(try await r.state() == (false, 0))
    }
}
