import Foundation
import Harness
import Messages
import ServiceKit
import Support
import TestSupport
import Testing
import Wire

@testable import NotificationService

/// What only the real executable shows: restarts (events that arrived while it was down, a
/// fan-out under way when it stopped) and what it publishes to other processes.
@Suite(.serialized)
struct ServiceProcessTests {
    @Test func eventsEmittedWhileItWasDownAreAppliedOnceAfterARestart() async throws {
        // This AuthService answers no lookups: the service knows users only from auth's events.
        let h = try await ProcessHarness(answersLookups: false)
        defer { h.shutdown() }
        let ids = try await h.auth.register(["owner", "a", "b", "c"])
        let owner = ids[0]
        try await h.waitForEvents(of: h.auth.producer)
        try await h.like(ids[1], owner, post: "p1")
        try await h.waitForEvents(of: h.profile)
        let applied = (auth: h.auth.producer.database.currentHead(), profile: h.profile.database.currentHead())

        h.stopService()
        try await h.like(ids[2], owner, post: "p1")
        try await h.like(ids[3], owner, post: "p1")
        try await h.like(ids[1], owner, post: "p1")  // an action already applied
        let late = try await h.auth.register("late")
        _ = try await h.auth.rename(ids[3].id, to: "cee")
        try await h.startService()
        try await h.waitForEvents(of: h.auth.producer, since: applied.auth)
        try await h.waitForEvents(of: h.profile, since: applied.profile)

        let notes = try await h.notifications(owner)
        #expect(notes.items.map(\.seq) == [3, 2, 1])
        #expect(notes.items.map(\.actorId) == [ids[3].id, ids[2].id, ids[1].id])
        #expect(notes.unreadCount == 3)
        // The identity events of the downtime are applied: a new user, a rename.
        #expect(try await h.follow(late, "owner").followState == .following)
        #expect(try await h.header(owner, "cee").userId == ids[3].id)
        let renamed = await #expect(throws: ServiceError.self) { try await h.header(owner, "c") }
        #expect(renamed?.status == 404)

        // Every profile event delivered again (the subscriber's cursor lost): nothing changes.
        h.stopService()
        let database = try TestStorage.location(h.cluster.dataDirectory, "notification").connect()
        try database.query("UPDATE event_cursor SET seq = 0 WHERE producer = 'profile'")
        try await h.startService()
        try await h.waitForEvents(of: h.profile)
        let again = try await h.notifications(owner)
        #expect(again.items.map(\.seq) == [4, 3, 2, 1])  // seq 4: late's follow
        #expect(again.items.map(\.type.wire) == ["follow", "like", "like", "like"])
    }

    @Test func aFanOutUnderWayWhenTheServiceStoppedCompletesAfterItRestarts() async throws {
        let h = try await ProcessHarness()
        defer { h.shutdown() }
        let star = try await h.auth.register("star")
        let fans = try await h.auth.register((0..<300).map { "fan\($0)" })
        try await h.waitForEvents(of: h.auth.producer)
        try await forEach(Array(fans.enumerated()), width: 8) { i, fan in
            try await h.follow(fan, "star", notifyPosts: i % 3 != 0)
        }
        let notified = fans.enumerated().filter { $0.offset % 3 != 0 }.map(\.element)
        let quiet = fans.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)

        // Stopped in the middle of a fan-out: the job recorded and two batches of 50 written,
        // by the service's own code on its database, as a process killed between batches leaves it.
        h.stopService()
        do {
            let database = try TestDatabase.open(in: h.directory)
            let worker = FanOutWorker(
                database: database, notifications: NotificationWriter(delivery: .none), batch: 50,
                logger: InProcessService.logger)
            try await database.write { tx in
                try worker.start(
                    FanOutJob.make(
                        postId: "big", ownerId: star.id, thumbnailURL: "https://img.example/big.jpg",
                        createdAt: Timestamp.nowMs(), in: tx), in: tx)
            }
            #expect(try await worker.step())
            #expect(try await worker.step())
        }
        try await h.startService()

        var waiting = notified
        try await eventually("\(waiting.count) followers still without the post") {
            var still: [Identity] = []
            for fan in waiting where try await h.since(fan, after: 0, limit: 1).headSeq == 0 { still.append(fan) }
            waiting = still
            return still.isEmpty
        }
        try await forEach(notified) { fan in
            let items = try await h.since(fan, after: 0).items
            #expect(items.map(\.type.wire) == ["post"], "\(fan.username)")
            #expect(items.first?.post?.id == "big" && items.first?.actorId == star.id, "\(fan.username)")
        }
        try await forEach(quiet) { fan in
            let items = try await h.since(fan, after: 0).items
            #expect(items.isEmpty, "\(fan.username)")
        }
    }

    @Test func notificationsAreDeliveredOnlyToTheirRecipientsSubscribers() async throws {
        let h = try await ProcessHarness()
        defer { h.shutdown() }
        let alice = try await h.auth.register("alice")
        let bob = try await h.auth.register("bob")
        let carol = try await h.auth.register("carol")
        try await h.waitForEvents(of: h.auth.producer)

        // A subscriber to bob's topic only, as a gateway holding bob's stream.
        let start = try await h.client.call(Notifications.StreamStart.self, .init(recipientId: bob.id))
        #expect(start.headSeq == 0)
        let received = Locked<[TopicItem]>([])
        let subscriber = TopicSubscriber(
            name: "test.delivery", context: h.context, endpoints: [h.cluster.endpoints["notification"]!["delivery"]!],
            service: "notification", logger: InProcessService.logger, security: try h.cluster.security(context: h.context)
        ) { items in received.withLock { $0 += items } }
        let topic = NotificationRouting.topic(recipientKey: start.recipientKey)
        subscriber.subscribe(topic)
        let task = Task { try await subscriber.run() }
        defer { task.cancel() }
        try await eventually("the welcome for bob's topic") {
            received.withLock { $0.contains { if case .welcome(topic) = $0 { true } else { false } } }
        }

        try await h.follow(alice, "bob")
        try await h.follow(alice, "carol")  // carol's: not for this subscriber
        try await h.like(alice, bob, post: "v1", type: "video")
        try await h.like(alice, carol, post: "p1")
        try await eventually("two notifications for bob, have \(received.withLock { $0.count } - 1)") {
            received.withLock { $0.count } >= 3
        }
        try await h.waitForHead(carol, atLeast: 2)
        let messages = received.withLock { $0 }.compactMap { item -> TopicMessage? in
            if case .message(let m) = item { m } else { nil }
        }
        #expect(messages.allSatisfy { $0.topic == topic })
        let events = try messages.map { try WireJSON.decode(Notifications.Notification.self, from: $0.payload) }
        #expect(events.map(\.type.wire) == ["follow", "like"])
        #expect(events.map(\.seq) == [1, 2])
        #expect(events.map(\.actorId) == [alice.id, alice.id])
        #expect(events.map(\.detail) == [nil, "video"])
        #expect(events[0].followState == .notFollowing)
        #expect(events[1].post == .init(id: "v1", thumbnailURL: "https://img.example/v1.jpg"))
        // What was delivered is what the service lists.
        #expect(try await h.since(bob, after: 0).items == events)
        let heads = try await h.client.call(Notifications.Heads.self, .init(recipientKeys: [start.recipientKey, 999_999]))
        #expect(heads.heads == [2, 0])
    }
}
