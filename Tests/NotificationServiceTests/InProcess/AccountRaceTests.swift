import Foundation
import Harness
import Messages
import Storage
import Support
import Testing
import Wire

@testable import NotificationService

/// A follow, a block, a mute and a notification racing the erasure or the suspension of an account,
/// made deterministic as `BlockRaceTests` does: one transaction is held open on one `Database`
/// while the other runs on a second one (another replica; on SQLite the second writer waits for
/// the file's write lock, on PostgreSQL for the account's advisory lock), then released. Whichever
/// came first, nothing between the two is left once the worker has run.
@Suite(.serialized)
struct AccountRaceTests {
    static let (alice, bob) = (UserRef(id: "u-alice", username: "alice"), UserRef(id: "u-bob", username: "bob"))
    static var writer: NotificationWriter { NotificationWriter(delivery: .none) }

    typealias Replicas = BlockRaceTests.Replicas

    static let markErased: @Sendable (Transaction) throws -> Void = { tx in
        _ = try AccountStates.erase(userId: Self.bob.id, nowMs: 1, in: tx)
    }

    /// A write by alice toward bob (or the other way) that may race bob's erasure.
    static let follow: @Sendable (Transaction) throws -> Void = { tx in
        _ = try SQLFollowStore.follow(
            follower: Self.alice, followee: Self.bob, notifyPosts: nil, nowMs: 2, notifications: Self.writer, in: tx)
    }
    static let followBack: @Sendable (Transaction) throws -> Void = { tx in
        _ = try SQLFollowStore.follow(
            follower: Self.bob, followee: Self.alice, notifyPosts: nil, nowMs: 2, notifications: Self.writer, in: tx)
    }
    static let block: @Sendable (Transaction) throws -> Void = { tx in
        _ = try SafetyStore.setBlock(user: Self.alice, target: Self.bob, blocking: true, nowMs: 2, in: tx)
    }
    static let like: @Sendable (Transaction) throws -> Void = { tx in
        _ = try Self.writer.insert(
            NewNotification(
                recipientId: Self.alice.id, actorId: Self.bob.id, type: .like, detail: "photo",
                post: .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"), createdAt: 2),
            in: tx)
    }

    /// Runs `first` held open on one replica and `second` on the other, then the erasure's worker.
    /// - Returns: the second write's result.
    static func race(
        _ r: Replicas, first: @escaping @Sendable (Transaction) throws -> Void,
        second: @escaping @Sendable (Transaction) throws -> Void
    ) async throws -> Result<Void, any Error> {
        let release = DispatchSemaphore(value: 0)
        let (started, held) = DeviceTrustTests.hold(r.first, release, first)
        await onThread { started.wait() }
        let other = Task { try await r.second.write(second) }
        try await DeviceTrustTests.untilBlocked(r.directory)
        release.signal()
        try await held.value
        let result = await other.result
        let worker = AccountWorker(database: r.second, batch: 2, logger: InProcessService.logger)
        while try await worker.step() != nil {}
        return result
    }

    /// What is left between the two, and bob's rows anywhere.
    static func left(_ r: Replicas) async throws -> [String: Int64] {
        try await r.first.read { c in
            guard let b = try Keys.existingUser(Self.bob.id, on: c) else { return [:] }
            var found: [String: Int64] = [:]
            for (table, condition) in AccountChecks.references {
                let n = try c.scalar("SELECT COUNT(*) FROM \(unescaped: table) WHERE \(condition(b))") ?? 0
                if n > 0 { found[table] = n }
            }
            return found
        }
    }

    /// The erasure's mark is held open: a follow of or by bob, a block of bob, a like by bob wait
    /// for it, then find bob gone (404, or no notification).
    @Test(arguments: ["follow", "followBack", "block", "like"])
    func aWriteWaitingOnTheErasureMakesNothing(write: String) async throws {
        let r = try Replicas()
        let body = [("follow", Self.follow), ("followBack", Self.followBack), ("block", Self.block), ("like", Self.like)]
            .first { $0.0 == write }!.1
        let result = try await Self.race(r, first: Self.markErased, second: body)
        if write != "like" {
            let error = #expect(throws: ServiceError.self) { try result.get() }
            #expect(error?.status == 404)
        }
        #expect(try await Self.left(r) == [:])
        #expect(try await AccountChecks.countMismatches(in: r.first) == 0)
    }

    /// The write is held open first: the erasure's mark waits for it, and the worker then finds
    /// and erases what it made, its counts corrected.
    @Test(arguments: ["follow", "followBack", "block", "like"])
    func anErasureWaitingOnAWriteErasesWhatItMade(write: String) async throws {
        let r = try Replicas()
        let body = [("follow", Self.follow), ("followBack", Self.followBack), ("block", Self.block), ("like", Self.like)]
            .first { $0.0 == write }!.1
        try (try await Self.race(r, first: body, second: Self.markErased)).get()
        #expect(try await Self.left(r) == [:])
        #expect(try await AccountChecks.countMismatches(in: r.first) == 0)
        #expect(
            try await r.first.read { c in try c.scalar("SELECT COUNT(*) FROM all_notifications") } == 0)
    }

    /// A like by bob held open while bob is suspended on the other replica: the like's notification
    /// committed first, so the hold finds it; lifting the suspension brings it back.
    @Test func aNotificationRacingASuspensionIsHeldAndComesBack() async throws {
        let r = try Replicas()
        let suspend: @Sendable (Transaction) throws -> Void = { tx in
            _ = try AccountStates.apply(userId: Self.bob.id, state: .suspended, version: 1, nowMs: 1, in: tx)
        }
        try (try await Self.race(r, first: Self.like, second: suspend)).get()
        let visible: SQL = "SELECT COUNT(*) FROM all_notifications"
        #expect(try await r.first.read { try $0.scalar(visible) } == 0)
        #expect(try await r.first.read { try $0.scalar("SELECT COUNT(*) FROM held_notifications") } == 1)
        let lift: @Sendable (Transaction) throws -> Void = { tx in
            _ = try AccountStates.apply(userId: Self.bob.id, state: .active, version: 2, nowMs: 3, in: tx)
        }
        try await r.second.write(lift)
        let worker = AccountWorker(database: r.second, batch: 2, logger: InProcessService.logger)
        while try await worker.step() != nil {}
        #expect(try await r.first.read { try $0.scalar(visible) } == 1)
    }
}
