import Foundation
import Harness
import Messages
import Testing
import Wire

@testable import NotificationService

/// `FanOutWorker` step by step: a new post's fan-out to `notifyPosts` followers, written with
/// its event when it fits one batch, else carried on as a job in transactions of at most one
/// batch that survives a restart, is cancelled by the post's deletion, and never notifies
/// anyone twice.
struct FanOutWorkerTests {
    static let batch = 3

    /// A service with fan-out batches of 3, the star and `fans` followers with `notifyPosts`
    /// (plus two without, who must never get a post notification).
    struct Setup {
        let service: InProcessService
        let star: Identity
        let fans: [Identity]
        let quiet: [Identity]

        init(fans count: Int) async throws {
            service = try await InProcessService(fanOutBatch: FanOutWorkerTests.batch)
            star = try await service.user("star")
            fans = try await service.users((0..<count).map { "fan\($0)" })
            quiet = try await service.users(["quiet0", "quiet1"])
            for fan in fans { try await service.follow(fan, "star", notifyPosts: true) }
            for user in quiet { try await service.follow(user, "star") }
        }

        /// Starts the fan-out of `post` as the `profile.post.created` handler does, in one transaction.
        func start(_ post: String = "big", on worker: FanOutWorker? = nil) async throws {
            let worker = worker ?? service.app.jobs
            let owner = star.id
            try await service.database.write { tx in
                try worker.start(
                    FanOutJob.make(
                        postId: post, ownerId: owner, thumbnailURL: "https://img.example/\(post).jpg",
                        createdAt: Timestamp.nowMs(), in: tx), in: tx)
            }
        }

        /// How many post notifications about `post` each follower has (by follower id).
        func received(_ post: String = "big") async throws -> [String: Int] {
            var counts: [String: Int] = [:]
            for user in fans + quiet {
                let items = try await service.since(user, after: 0, limit: 1_000).items
                counts[user.id] = items.count { $0.type == .post && $0.post?.id == post }
            }
            return counts
        }

        /// The total of `received`.
        func total(_ post: String = "big") async throws -> Int { try await received(post).values.reduce(0, +) }

        /// Runs `worker.step()` until it reports no job, checking that each step writes at most one
        /// batch. - Returns: the number of steps that found a job.
        func drain(_ worker: FanOutWorker, post: String = "big") async throws -> Int {
            var steps = 0
            var before = try await total(post)
            while try await worker.step() {
                steps += 1
                let now = try await total(post)
                #expect(now - before <= FanOutWorkerTests.batch, "step \(steps) wrote \(now - before)")
                before = now
                guard steps <= fans.count + 2 else {
                    Issue.record("the job does not end")
                    break
                }
            }
            return steps
        }

        /// Every notifyPosts follower has exactly one post notification about `post`, the others none.
        func expectEveryFanNotifiedOnce(_ post: String = "big") async throws {
            let received = try await received(post)
            for fan in fans { #expect(received[fan.id] == 1, "\(fan.username)") }
            for user in quiet { #expect(received[user.id] == 0, "\(user.username)") }
        }
    }

    @Test func aFanOutThatFitsOneBatchIsWrittenWithItsEvent() async throws {
        let setup = try await Setup(fans: Self.batch)
        defer { setup.service.stop() }
        try await setup.start()
        try await setup.expectEveryFanNotifiedOnce()
        #expect(try await setup.service.app.jobs.step() == false)  // nothing left for the worker
    }

    @Test func aLargerFanOutIsAJobWrittenInTransactionsOfOneBatch() async throws {
        let setup = try await Setup(fans: 10)
        defer { setup.service.stop() }
        try await setup.start()
        #expect(try await setup.total() <= Self.batch)  // the event's own transaction stays small too
        let steps = try await setup.drain(setup.service.app.jobs)
        #expect(steps >= 10 / Self.batch)
        try await setup.expectEveryFanNotifiedOnce()
        let fan = try await setup.service.notifications(setup.fans[0]).items.first
        #expect(fan?.type == .post && fan?.actorId == setup.star.id && fan?.detail == nil)
        #expect(fan?.post == .init(id: "big", thumbnailURL: "https://img.example/big.jpg"))
    }

    @Test func aJobResumesAfterARestart() async throws {
        let setup = try await Setup(fans: 10)
        defer { setup.service.stop() }
        try await setup.start()
        #expect(try await setup.service.app.jobs.step())
        #expect(try await setup.service.app.jobs.step())
        let before = try await setup.total()
        #expect(before > 0 && before < 10)
        // A restart: the database opened again, a new worker that knows nothing of the old one.
        let reopened = try TestDatabase.open(in: setup.service.directory)
        let worker = FanOutWorker(
            database: reopened, notifications: NotificationWriter(delivery: .none), batch: Self.batch,
            logger: InProcessService.logger)
        let steps = try await setup.drain(worker)
        #expect(steps >= 1)
        try await setup.expectEveryFanNotifiedOnce()
        // Seqs stayed consecutive: nobody's notification was written twice and rolled back.
        for fan in setup.fans { #expect(try await setup.service.since(fan, after: 0).headSeq == 1) }
    }

    @Test func theWorkerRunsJobsOnItsOwn() async throws {
        let setup = try await Setup(fans: 10)
        defer { setup.service.stop() }
        // A job left by a previous run, then one started while it runs.
        try await setup.start("old")
        let worker = setup.service.app.jobs
        let run = Task { await worker.run() }
        defer { run.cancel() }
        try await setup.start("new")
        try await eventually("both fan-outs done") {
            let old = try await setup.total("old")
            let new = try await setup.total("new")
            return old == 10 && new == 10
        }
        try await setup.expectEveryFanNotifiedOnce("old")
        try await setup.expectEveryFanNotifiedOnce("new")
    }

    @Test func aDeletedPostCancelsItsJob() async throws {
        let setup = try await Setup(fans: 10)
        defer { setup.service.stop() }
        let feed = try await ProfileFeed(into: setup.service)
        defer { feed.stop() }
        try await feed.emit(
            Profile.PostCreated(
                postId: "big", ownerId: setup.star.id, thumbnailURL: "https://img.example/big.jpg", taggedUserIds: [],
                createdAt: Timestamp.now()))
        #expect(try await setup.service.app.jobs.step())
        #expect(try await setup.total() > 0)
        try await feed.emit(Profile.PostDeleted(postId: "big", ownerId: setup.star.id))
        // What was written goes, a batch at a time (the first with the event), and nothing more
        // is written.
        #expect(try await setup.total() <= 2 * Self.batch - Self.batch)
        while try await setup.service.app.jobs.step() {}
        #expect(try await setup.total() == 0)
        #expect(try await setup.service.app.jobs.step() == false)
    }

    @Test func repeatsAreAbsorbed() async throws {
        let setup = try await Setup(fans: 10)
        defer { setup.service.stop() }
        let worker = setup.service.app.jobs
        try await setup.start()
        #expect(try await worker.step())
        try await setup.start()  // the same post again while its job runs (a replayed event)
        _ = try await setup.drain(worker)
        try await setup.start()  // and again after it finished
        _ = try await setup.drain(worker)
        try await setup.expectEveryFanNotifiedOnce()
        for fan in setup.fans { #expect(try await setup.service.since(fan, after: 0).headSeq == 1) }
    }

    /// A fan-out after a post's notifications were deleted goes on above the deleted seqs (the
    /// floor), for the followers in every batch.
    @Test func aFanOutAfterADeletionGoesOnAboveTheDeletedSeqs() async throws {
        let setup = try await Setup(fans: 7)
        defer { setup.service.stop() }
        let worker = setup.service.app.jobs
        try await setup.start("first")
        while try await worker.step() {}
        try await setup.service.database.write { tx in
            try worker.purge(post: try Keys.existingPost("first", on: tx.connection)!, in: tx)
        }
        while try await worker.step() {}
        #expect(try await setup.total("first") == 0)
        try await setup.start("second")
        while try await worker.step() {}
        for fan in setup.fans {
            #expect(try await setup.service.since(fan, after: 0).items.map(\.seq) == [2], "\(fan.username)")
        }
    }
}
