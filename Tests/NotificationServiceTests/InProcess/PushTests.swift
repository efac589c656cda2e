import APNs
import BackendKit
import Foundation
import Harness
import Messages
import TestSupport
import Testing
import Wire

@testable import NotificationService

/// Devices, preferences, the push queue and `PushSender`, in-process with a recording
/// `PushTransport` and a clock the test moves (never a sleep): what is queued with each
/// notification, what is sent, and what each APNs outcome does to the queue and the devices.
struct PushTests {
    /// A service with push on, its transport, clock and a sender (`step()` called by the test).
    struct Setup {
        let s: InProcessService
        let transport = RecordingTransport()
        let clock = TestClock()
        let sender: PushSender

        init(
            fanOutBatch: Int = 2_000, batch: Int = 100, environments: Set<String> = ["sandbox", "production"]
        ) async throws {
            let queue = clock.queue(environments: environments)
            s = try await InProcessService(fanOutBatch: fanOutBatch, push: (transport, queue))
            sender = PushSender(
                database: s.database, transport: transport, queue: queue, logger: InProcessService.logger,
                batch: batch, leaseMs: 60_000)
        }

        /// Registers a device of `user` (session `session`).
        @discardableResult
        func device(_ user: Identity, _ n: Int, session: String = "s1", environment: String = "sandbox") async throws
            -> Notifications.Device
        {
            // One phone (installation) for every device of these tests: a token moves between
            // accounts only from the same installation.
            try await s.app.devices.store.register(
                .init(
                    userId: user.id, sessionId: session, token: testToken(n), environment: environment,
                    installationId: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))
        }

        /// Steps the sender until nothing is due. - Returns: rows claimed in all.
        @discardableResult
        func drain(_ sender: PushSender? = nil) async throws -> Int {
            var total = 0
            while true {
                let n = try await (sender ?? self.sender).step()
                if n == 0 { return total }
                total += n
            }
        }

        /// Rows in the push queue.
        func queued() async throws -> Int64 {
            try await s.database.read { try $0.scalar("SELECT COUNT(*) FROM push_queue") ?? 0 }
        }

        /// Writes a like notification directly through the service's writer.
        func like(_ liker: Identity, _ owner: Identity, post: String) async throws {
            let writer = s.app.profileEvents.notifications
            _ = try await s.database.write { tx in
                try writer.insert(
                    NewNotification(
                        recipientId: owner.id, actorId: liker.id, type: .like, detail: "photo",
                        post: .init(id: post, thumbnailURL: "https://img.example/\(post).jpg"), createdAt: Timestamp.nowMs()),
                    in: tx)
            }
        }
    }

    @Test func aLikeReachesEveryDeviceOfThePostsOwnerOnce() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["owner", "liker", "other"])
        let (owner, liker, other) = (ids[0], ids[1], ids[2])
        try await t.device(owner, 1)
        try await t.device(owner, 2, session: "s2")
        try await t.device(other, 3)
        try await feed.like(liker, owner, post: "p1")
        #expect(try await t.queued() == 2)

        #expect(try await t.drain() == 2)
        let messages = t.transport.messages
        #expect(Set(messages.map(\.deviceToken)) == [testToken(1), testToken(2)])
        let stored = try await t.s.allNotifications(owner)
        #expect(stored.count == 1)
        for m in messages {
            let push = try DecodedPush(m)
            #expect(push.aps.alert.body == "liker liked your photo.")
            #expect(push.aps.badge == 1)
            #expect(push.aps.sound == "default")
            #expect(push.aps.threadID == "like")
            #expect(push.notificationId == stored[0].id && push.seq == stored[0].seq)
            #expect(m.collapseID == "like:p1" && m.priority == 10 && m.payload.count <= 4_096)
            #expect(m.expiration > t.clock.read() / 1_000 + 86_000 && m.expiration <= t.clock.read() / 1_000 + 86_400)
        }
        // Sent once: nothing left, nothing sent again, also after the lease would have ended.
        #expect(try await t.queued() == 0)
        t.clock.advance(ms: 3_600_000)
        #expect(try await t.drain() == 0)
        #expect(t.transport.messages.count == 2)
    }

    @Test func onlyDevicesOfTheEnvironmentsTheTransportReachesGetPushes() async throws {
        #expect(PushQueue.environments(forURL: "https://api.sandbox.push.apple.com") == ["sandbox"])
        #expect(PushQueue.environments(forURL: "https://api.push.apple.com:443") == ["production"])
        #expect(PushQueue.environments(forURL: "https://API.push.apple.com./") == ["production"])
        #expect(PushQueue.environments(forURL: "https://127.0.0.1:8443") == ["sandbox", "production"])
        let t = try await Setup(environments: ["production"])
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        try await t.device(ids[0], 1, environment: "sandbox")
        try await t.device(ids[0], 2, environment: "production")
        try await feed.like(ids[1], ids[0], post: "p1")
        #expect(try await t.queued() == 1)
        #expect(try await t.drain() == 1)
        #expect(t.transport.messages.map(\.deviceToken) == [testToken(2)])
    }

    @Test func theBadgeIsTheUnreadCountWhenSent() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        try await t.device(ids[0], 1)
        try await t.like(ids[1], ids[0], post: "p1")
        try await t.like(ids[1], ids[0], post: "p2")
        try await t.like(ids[1], ids[0], post: "p3")
        _ = try await t.s.markRead(ids[0], upTo: 1)
        try await t.drain()
        #expect(try t.transport.messages.map { try DecodedPush($0).aps.badge } == [2, 2, 2])
        #expect(try t.transport.messages.map { try DecodedPush($0).seq } == [1, 2, 3])
    }

    @Test func preferencesOffMeansNoPush() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        let (owner, liker) = (ids[0], ids[1])
        try await t.device(owner, 1)
        let store = t.s.app.devices.store
        #expect(try await store.preferences(userId: owner.id) == .init())
        let changed = try await store.updatePreferences(.init(userId: owner.id, like: false, tag: false))
        #expect(changed == .init(like: false, follow: true, comment: true, tag: false, post: true))
        #expect(try await store.preferences(userId: owner.id) == changed)

        try await t.like(liker, owner, post: "p1")
        #expect(try await t.queued() == 0)
        try await t.s.follow(liker, "owner")  // follow pushes are still on
        #expect(try await t.queued() == 1)
        try await t.drain()
        #expect(try t.transport.messages.map { try DecodedPush($0).aps.threadID } == ["follow"])

        _ = try await store.updatePreferences(.init(userId: owner.id, like: true))
        try await t.like(liker, owner, post: "p2")
        #expect(try await t.queued() == 1)
    }

    @Test func aDeadTokenRemovesTheDeviceUnlessRegisteredAgainAfter() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        let (owner, liker) = (ids[0], ids[1])
        try await t.device(owner, 1)
        try await t.device(owner, 2)
        t.transport.script(testToken(1), [.removeDevice(reason: "Unregistered", unregisteredAt: t.clock.read() + 1)])
        // Token 2 was unregistered before its registration: the device stays, the push is retried.
        t.transport.script(testToken(2), [.removeDevice(reason: "Unregistered", unregisteredAt: t.clock.read() - 1)])
        try await t.like(liker, owner, post: "p1")
        try await t.drain()
        let devices = try await t.s.app.devices.store.list(userId: owner.id, page: .init())
        #expect(devices.items.count == 1)
        #expect(try await t.queued() == 1)
        t.clock.advance(ms: 1_000)
        try await t.drain()
        #expect(try await t.queued() == 0)
        #expect(t.transport.messages.map(\.deviceToken) == [testToken(1), testToken(2), testToken(2)])
        // A later notification goes only to the device left.
        try await t.like(liker, owner, post: "p2")
        try await t.drain()
        #expect(t.transport.messages.last?.deviceToken == testToken(2) && t.transport.messages.count == 4)
    }

    @Test func aRetryIsDeliveredLater() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        try await t.device(ids[0], 1)
        t.transport.script(testToken(1), [.retry(reason: "TooManyRequests", after: 30), .retry(reason: "503", after: nil)])
        try await t.like(ids[1], ids[0], post: "p1")
        #expect(try await t.drain() == 1)
        #expect(try await t.queued() == 1)
        t.clock.advance(ms: 29_000)
        #expect(try await t.drain() == 0)  // Retry-After: 30 s
        t.clock.advance(ms: 1_000)
        #expect(try await t.drain() == 1)  // 503: back off 2 s (second attempt)
        t.clock.advance(ms: 1_999)
        #expect(try await t.drain() == 0)
        t.clock.advance(ms: 1)
        #expect(try await t.drain() == 1)
        #expect(try await t.queued() == 0)
        #expect(t.transport.messages.count == 3)
        #expect(Set(t.transport.messages.map(\.payload)).count == 1)
    }

    @Test func twoSendersOnOneDatabaseSendEachRowOnce() async throws {
        let t = try await Setup(batch: 7)
        defer { t.s.stop() }
        let names = (0..<10).map { "owner\($0)" }
        let owners = try await t.s.users(names)
        let liker = try await t.s.user("liker")
        for (i, owner) in owners.enumerated() {
            try await t.device(owner, 2 * i + 1)
            try await t.device(owner, 2 * i + 2)
        }
        for owner in owners {
            for p in 0..<6 { try await t.like(liker, owner, post: "\(owner.username)-p\(p)") }
        }
        #expect(try await t.queued() == 120)
        // The second sender on its own database connection (PostgreSQL: its own writer, so the
        // claims meet in the server, SKIP LOCKED); SQLite: one file, one writer per process.
        let database = TestStorage.engine == .postgres ? try TestDatabase.open(in: t.s.directory) : t.s.database
        let other = PushSender(
            database: database, transport: t.transport, queue: t.clock.queue(), logger: InProcessService.logger,
            batch: 7)
        #expect(other.claimer != t.sender.claimer)
        async let a = t.drain()
        async let b = t.drain(other)
        let (sentA, sentB) = try await (a, b)
        #expect(sentA + sentB == 120)
        let keys = try t.transport.messages.map { "\($0.deviceToken) \(try DecodedPush($0).notificationId)" }
        #expect(keys.count == 120 && Set(keys).count == 120)
        #expect(try await t.queued() == 0)
    }

    @Test func aKilledSendersRowsAreSentByAnotherAfterTheLease() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        try await t.device(ids[0], 1)
        for p in 0..<5 { try await t.like(ids[1], ids[0], post: "p\(p)") }
        // A sender claims them and dies before sending (or before recording what it sent).
        let now = t.clock.read()
        let claimed = try await t.s.database.write { tx in
            try PushQueueStore.claim(
                now: now, leaseUntil: now + 60_000, claimer: "dead", limit: 100, in: tx)
        }
        #expect(claimed.count == 5)
        #expect(try await t.drain() == 0)
        t.clock.advance(ms: 59_999)
        #expect(try await t.drain() == 0)
        t.clock.advance(ms: 1)
        #expect(try await t.drain() == 5)
        #expect(try t.transport.messages.map { try DecodedPush($0).seq } == [1, 2, 3, 4, 5])
        #expect(try await t.queued() == 0)
    }

    @Test func aBurstForOneUserDoesNotDelayAnothersLike() async throws {
        let t = try await Setup(batch: 50)
        defer { t.s.stop() }
        let ids = try await t.s.users(["a", "b", "liker"])
        let (a, b, liker) = (ids[0], ids[1], ids[2])
        try await t.device(a, 1)
        try await t.device(b, 2)
        let writer = t.s.app.profileEvents.notifications
        try await t.s.database.write { tx in
            for p in 0..<1_000 {
                try writer.insert(
                    NewNotification(
                        recipientId: a.id, actorId: liker.id, type: .like, detail: "photo",
                        post: .init(id: "burst\(p)", thumbnailURL: ""), createdAt: Timestamp.nowMs()), in: tx)
            }
        }
        try await t.like(liker, b, post: "b1")
        #expect(try await t.queued() == 1_001)
        // The first batch: a's first push and b's (round 0), then a's next 48.
        #expect(try await t.sender.step() == 50)
        #expect(t.transport.messages.map(\.deviceToken).filter { $0 == testToken(2) }.count == 1)
        #expect(try await t.drain() == 951)
        #expect(t.transport.messages.count == 1_001)
    }

    /// `run()`: a commit that queued pushes rings the doorbell, so the running sender sends at
    /// once (its poll here is 10 minutes, so nothing else could have woken it).
    @Test func theRunningSenderIsWokenByTheCommitThatQueues() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        try await t.device(ids[0], 1)
        let running = PushSender(
            database: t.s.database, transport: t.transport, queue: t.sender.queue, logger: InProcessService.logger,
            pollMs: 600_000)
        let task = Task { await running.run() }
        defer { task.cancel() }
        try await t.like(ids[1], ids[0], post: "p1")
        try await eventually("the like's push sent") { t.transport.messages.count == 1 }
        try await t.like(ids[1], ids[0], post: "p2")
        try await eventually("the second like's push sent") { t.transport.messages.count == 2 }
        try await eventually("both recorded as sent") { running.counts()["push.sent"] == 2 }
        #expect(try await t.queued() == 0)
    }

    /// `run()` keeps two batches in flight: the next batch is claimed and handed to the
    /// transport while the previous one is still being sent, and no third before the first ends.
    @Test func theRunningSenderHandsTheNextBatchOverWhileOneIsSending() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        try await t.device(ids[0], 1)
        for n in 1...3 { try await t.like(ids[1], ids[0], post: "p\(n)") }
        let held = HeldTransport()
        let running = PushSender(
            database: t.s.database, transport: held, queue: t.sender.queue, logger: InProcessService.logger, batch: 1,
            pollMs: 600_000)
        let task = Task { await running.run() }
        defer { task.cancel() }
        // The first batch's send is held; the second is handed over anyway.
        try await eventually("a second batch handed over while the first is sending") { held.calls == 2 }
        #expect(held.mostAtOnce == 2)
        held.release()
        try await eventually("all three recorded as sent") { running.counts()["push.sent"] == 3 }
        #expect(held.mostAtOnce == 2)
        #expect(try await t.queued() == 0)
    }

    @Test func aLikeDuringAFanOutGoesInTheNextBatch() async throws {
        let t = try await Setup(fanOutBatch: 100, batch: 50)
        defer { t.s.stop() }
        let fans = try await t.s.users((0..<250).map { "fan\($0)" })
        let ids = try await t.s.users(["star", "owner", "liker"])
        let (star, owner, liker) = (ids[0], ids[1], ids[2])
        for (i, fan) in fans.enumerated() {
            try await t.s.follow(fan, "star", notifyPosts: true)
            try await t.device(fan, i + 1)
        }
        try await t.device(owner, 1_000)
        let jobs = t.s.app.jobs
        try await t.s.database.write { tx in
            try jobs.start(
                FanOutJob.make(postId: "big", ownerId: star.id, thumbnailURL: "", createdAt: Timestamp.nowMs(), in: tx),
                in: tx)
        }
        while try await jobs.step() {}
        #expect(try await t.queued() == 250)
        #expect(try await t.sender.step() == 50)  // the fan-out alone: a full batch of it
        try await t.like(liker, owner, post: "p1")
        #expect(try await t.sender.step() == 50)
        #expect(t.transport.messages.suffix(50).contains { $0.deviceToken == testToken(1_000) })
        #expect(try await t.drain() == 151)
        let keys = try t.transport.messages.map { "\($0.deviceToken) \(try DecodedPush($0).notificationId)" }
        #expect(keys.count == 251 && Set(keys).count == 251)
    }

    @Test func aFanOutQueuesOnePushPerDeviceOfFollowersWithPostsOn() async throws {
        let t = try await Setup(fanOutBatch: 2)
        defer { t.s.stop() }
        let feed = try await ProfileFeed(into: t.s)
        defer { feed.stop() }
        let ids = try await t.s.users(["star", "f1", "f2", "f3", "f4", "f5"])
        let star = ids[0]
        for (i, fan) in ids.dropFirst().enumerated() {
            try await t.s.follow(fan, "star", notifyPosts: true)
            if i < 4 { try await t.device(fan, i + 1) }  // f5 has no device
        }
        _ = try await t.s.app.devices.store.updatePreferences(.init(userId: ids[4].id, post: false))  // f4: posts off
        try await t.drain()  // the follows' pushes go to nobody (star has no device)
        #expect(t.transport.messages.isEmpty)
        try await feed.emit(
            Profile.PostCreated(
                postId: "big", ownerId: star.id, thumbnailURL: "https://img.example/big.jpg", taggedUserIds: [],
                createdAt: Timestamp.now()))
        while try await t.s.app.jobs.step() {}
        #expect(try await t.queued() == 3)
        try await t.drain()
        #expect(Set(t.transport.messages.map(\.deviceToken)) == [testToken(1), testToken(2), testToken(3)])
        for m in t.transport.messages {
            let push = try DecodedPush(m)
            #expect(push.aps.alert.body == "star shared a new post." && push.aps.threadID == "post")
            #expect(m.collapseID == push.notificationId)
        }
    }

    @Test func logoutRemovesTheSessionsDevicesAndTheirPushes() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["owner", "liker"])
        let (owner, liker) = (ids[0], ids[1])
        try await t.device(owner, 1, session: "s1")
        try await t.device(owner, 2, session: "s1")
        let kept = try await t.device(owner, 3, session: "s2")
        try await t.like(liker, owner, post: "p1")
        #expect(try await t.queued() == 3)

        // auth.session.revoked through a real subscriber, as AuthService publishes it at logout.
        let subscriber = EventSubscriber(
            producer: .auth, endpoint: t.s.auth.producer.host.boundEndpoints.withLock { $0.events },
            context: t.s.context, replay: t.s.authClient, database: t.s.database, logger: InProcessService.logger)
        t.s.app.replica.subscribe(subscriber)
        t.s.app.devices.subscribe(subscriber)
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        let seq = try await t.s.auth.producer.emit(Auth.SessionRevoked(userId: owner.id, sessionIds: ["s1", "s9"]))
        try await eventually("auth events applied") { subscriber.counters()["subscriber.auth.delivered", default: 0] >= seq }

        #expect(try await t.s.app.devices.store.list(userId: owner.id, page: .init()).items == [kept])
        #expect(try await t.queued() == 1)
        try await t.drain()
        #expect(t.transport.messages.map(\.deviceToken) == [testToken(3)])
    }

    @Test func devicesRegisterListMoveAndDelete() async throws {
        let t = try await Setup()
        defer { t.s.stop() }
        let ids = try await t.s.users(["alice", "bob", "liker"])
        let (alice, bob, liker) = (ids[0], ids[1], ids[2])
        let store = t.s.app.devices.store
        let first = try await t.device(alice, 1)
        #expect(first.platform == "ios" && first.environment == "sandbox" && first.id.count == 32)
        // Registered again by alice: same id, new environment.
        let again = try await store.register(
            .init(userId: alice.id, sessionId: "s2", token: testToken(1), environment: "production"))
        #expect(again.id == first.id && again.environment == "production")
        for n in 2...4 { try await t.device(alice, n) }
        let page1 = try await store.list(userId: alice.id, page: .init(limit: 3))
        #expect(page1.items.count == 3 && page1.nextCursor != nil)
        let page2 = try await store.list(userId: alice.id, page: .init(limit: 3, cursor: page1.nextCursor))
        #expect(page2.items.map(\.id) == [first.id] && page2.nextCursor == nil)
        await #expect(throws: ServiceError.self) {
            try await store.list(userId: bob.id, page: .init(limit: 3, cursor: page1.nextCursor))
        }

        // A push queued for alice's device is not sent to bob when he takes the token.
        try await t.like(liker, alice, post: "p1")
        #expect(try await t.queued() == 4)
        let moved = try await t.device(bob, 1)
        #expect(moved.id != first.id)
        #expect(try await t.queued() == 3)
        #expect(try await store.list(userId: alice.id, page: .init()).items.count == 3)
        #expect(try await store.list(userId: bob.id, page: .init()).items == [moved])

        // Deleting: someone else's or unknown is 404; one's own goes with its pushes.
        await #expect(throws: ServiceError.self) { try await store.delete(userId: alice.id, deviceId: moved.id) }
        await #expect(throws: ServiceError.self) { try await store.delete(userId: alice.id, deviceId: "nope") }
        let aliceDevice = try await store.list(userId: alice.id, page: .init()).items[0]
        try await store.delete(userId: alice.id, deviceId: aliceDevice.id)
        #expect(try await t.queued() == 2)
        #expect(try await store.list(userId: alice.id, page: .init()).items.count == 2)

        await #expect(throws: ServiceError.self) {
            try await store.register(.init(userId: alice.id, sessionId: "s", token: "ABCD", environment: "test"))
        }

        // At most 20 devices a user: the 21st registration removes the oldest.
        let oldest = try await t.device(liker, 100)
        for n in 101..<120 { try await t.device(liker, n) }
        #expect(try await store.list(userId: liker.id, page: .init(limit: 100)).items.count == 20)
        let newest = try await t.device(liker, 120)
        let kept = try await store.list(userId: liker.id, page: .init(limit: 100)).items
        #expect(kept.count == 20 && kept.first == newest && !kept.contains(oldest))
    }

    @Test func pushIsOffWithoutATransport() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let ids = try await s.users(["owner", "liker"])
        _ = try await s.app.devices.store.register(
            .init(userId: ids[0].id, sessionId: "s", token: testToken(1), environment: "sandbox"))
        #expect(s.app.sender == nil)
        try await s.follow(ids[1], "owner")
        #expect(try await s.database.read { try $0.scalar("SELECT COUNT(*) FROM push_queue") } == 0)
    }

    @Test func aLongTextIsCutToFitThePayloadLimit() throws {
        let push = ClaimedPush(
            id: 1, device: 1, token: testToken(1), recipient: 1, seq: 1, type: .comment,
            text: "alice commented: " + String(repeating: "é\"", count: 3_000), collapseID: nil, attempts: 0,
            createdAt: 0, badge: 3, notificationId: "n1")
        let message = PushPayload.message(push)
        #expect(message.payload.count <= 4_096 && message.payload.count > 3_900)
        #expect(try DecodedPush(message).aps.alert.body.hasSuffix("…"))
        #expect(message.collapseID == "n1" && message.expiration == 86_400)
        // One character can be thousands of bytes (found by a fresh-user trial: these came out
        // as an empty body or "alice co…"): the cut keeps what fits, by encoded bytes.
        // (The first is one character of 3,001 scalars after the prefix: cut before it.)
        for (comment, kept, least) in [
            ("a" + String(repeating: "\u{301}", count: 3_000), "alice commented: ", 100),
            ("a" + String(repeating: "👨‍👩‍👧‍👦", count: 300), "alice commented: a👨‍👩‍👧‍👦", 3_900),
            (String(repeating: "🇺🇸", count: 2_000), "alice commented: 🇺🇸🇺🇸", 3_900),
        ] {
            var long = push
            long.text = "alice commented: " + comment
            let cut = PushPayload.message(long)
            let body = try DecodedPush(cut).aps.alert.body
            #expect(cut.payload.count <= 4_096 && cut.payload.count > least, "\(cut.payload.count) bytes")
            #expect(body.hasPrefix(kept) && body.hasSuffix("…"), "\(body.prefix(40))")
        }
    }
}
