import Foundation
import Harness
import Testing

@testable import Messages
@testable import ServiceKit
@testable import Support
@testable import Transport
@testable import Wire

/// `TopicPublisher` and `TopicSubscriber` over real libzmq sockets on loopback: welcomes,
/// routing by topic, subscriptions counted by the publisher (builders skip what nobody
/// subscribed to), resubscription after the publisher restarts; and the wire helpers.
struct RoutedDeliveryTests {
    static let logger = Logger(service: "test", minimum: .error)

    static func topic(_ key: Int64) -> [UInt8] { NotificationRouting.topic(recipientKey: key) }

    @Test func topicsAreFixedWidthAndRoundTrip() {
        for key: Int64 in [0, 1, 255, 1 << 40, Int64.max] {
            let t = Self.topic(key)
            #expect(t.count == 17 && t[0] == UInt8(ascii: "n"))
            #expect(NotificationRouting.recipientKey(topic: t) == key)
        }
        #expect(String(decoding: Self.topic(0x1f), as: UTF8.self) == "n000000000000001f")
        #expect(NotificationRouting.recipientKey(topic: Array("n00000000000001F".utf8)) == nil)  // 16 chars
        #expect(NotificationRouting.recipientKey(topic: Array("n000000000000001G".utf8)) == nil)
        #expect(NotificationRouting.recipientKey(topic: Array("graph.follow.cha".utf8)) == nil)
    }

    @Test func aSubscriberGetsAWelcomeThenOnlyItsTopics() async throws {
        let context = ZMQContext()
        let publisher = TopicPublisher(name: "test.pub", context: context, bind: "tcp://127.0.0.1:*", logger: Self.logger)
        let endpoint = try publisher.bind()
        let running = Task { await publisher.run() }
        defer {
            publisher.shutdownGracefully()
            running.cancel()
        }
        let a = Collector(context: context, endpoint: endpoint)
        defer { a.stop() }
        a.subscriber.subscribe(Self.topic(1))
        try await a.wait("the welcome") { a.welcomes == [Self.topic(1)] }
        // Built only for subscribed topics: the builder is told which.
        let asked = Locked<[Int64: Bool]>([:])
        publisher.publish { isSubscribed in
            (Int64(1)...3).compactMap { key -> TopicMessage? in
                let subscribed = isSubscribed(Self.topic(key))
                asked.withLock { $0[key] = subscribed }
                return subscribed ? TopicMessage(topic: Self.topic(key), payload: Array("m\(key)".utf8)) : nil
            }
        }
        // And what is sent to a topic nobody subscribed to is dropped by libzmq anyway.
        publisher.publish { [TopicMessage(topic: Self.topic(2), payload: Array("x".utf8))] }
        publisher.publish { [TopicMessage(topic: Self.topic(1), payload: Array("last".utf8))] }
        try await a.wait("two messages") { a.messages.count == 2 }
        #expect(asked.withLock { $0 } == [1: true, 2: false, 3: false])
        #expect(a.messages.map { String(decoding: $0.payload, as: UTF8.self) } == ["m1", "last"])

        // A second subscriber to the same topic is welcomed too (XPUB_VERBOSE), and its leaving
        // does not end the first one's subscription (the publisher counts them).
        let b = Collector(context: context, endpoint: endpoint)
        b.subscriber.subscribe(Self.topic(1))
        try await b.wait("b's welcome") { !b.welcomes.isEmpty }
        b.subscriber.unsubscribe(Self.topic(1))
        b.stop()
        try await a.wait("the publisher sees one subscription of topic 1 left") {
            let c = publisher.counters()
            return c["delivery.subscribes"] == 2 && c["delivery.topics"] == 1
        }
        publisher.publish { isSubscribed in
            isSubscribed(Self.topic(1)) ? [TopicMessage(topic: Self.topic(1), payload: Array("still".utf8))] : []
        }
        try await a.wait("a third message") { a.messages.count == 3 }
    }

    @Test func aPrefixSubscriptionMatchesEveryTopicUnderIt() async throws {
        let context = ZMQContext()
        let publisher = TopicPublisher(name: "test.pub", context: context, bind: "tcp://127.0.0.1:*", logger: Self.logger)
        let endpoint = try publisher.bind()
        let running = Task { await publisher.run() }
        defer {
            publisher.shutdownGracefully()
            running.cancel()
        }
        let all = Collector(context: context, endpoint: endpoint)
        defer { all.stop() }
        all.subscriber.subscribe(Array("n".utf8))
        try await all.wait("the welcome") { !all.welcomes.isEmpty }
        publisher.publish { isSubscribed in
            [Int64(5), 6].compactMap { key in
                isSubscribed(Self.topic(key)) ? TopicMessage(topic: Self.topic(key), payload: [1]) : nil
            }
        }
        try await all.wait("both") { all.messages.count == 2 }
    }

    @Test func aRestartedPublisherWelcomesTheSubscriptionAgain() async throws {
        let context = ZMQContext()
        let first = TopicPublisher(name: "test.pub", context: context, bind: "tcp://127.0.0.1:*", logger: Self.logger)
        let endpoint = try first.bind()
        let firstRun = Task { await first.run() }
        let a = Collector(context: context, endpoint: endpoint)
        defer { a.stop() }
        a.subscriber.subscribe(Self.topic(9))
        try await a.wait("the welcome") { a.welcomes.count == 1 }
        first.shutdownGracefully()
        await firstRun.value
        // The same endpoint again: the subscriber reconnects and resubscribes by itself.
        let restarted = TopicPublisher(name: "test.pub", context: context, bind: endpoint, logger: Self.logger)
        // libzmq releases the port in the background once the old socket is closed.
        try await eventually("the old socket's port released", within: 30, intervalMs: 10) {
            (try? restarted.bind()) != nil
        }
        let running = Task { await restarted.run() }
        defer {
            restarted.shutdownGracefully()
            running.cancel()
        }
        try await a.wait("a second welcome") { a.welcomes.count == 2 }
        restarted.publish { isSubscribed in
            isSubscribed(Self.topic(9)) ? [TopicMessage(topic: Self.topic(9), payload: [7])] : []
        }
        try await a.wait("the message") { a.messages.count == 1 }
    }

    @Test func timestampsParseWhatTheyFormat() {
        for ms: Int64 in [0, 1_764_439_490_123, 1_764_439_490_000, 4_102_444_800_999] {
            #expect(Timestamp.parse(Timestamp.format(ms: ms)) == ms)
        }
        #expect(Timestamp.parse("2026-11-30T12:00:00Z") == 1_796_040_000_000)
        #expect(Timestamp.parse("2026-11-30T12:00:00.5Z") == 1_796_040_000_500)
        #expect(Timestamp.parse("2026-11-30T12:00:00.123456789Z") == 1_796_040_000_123)
        for bad in ["", "2026-11-30", "2026-11-30T12:00:00+01:00", "2026-13-30T12:00:00Z", "2026-11-30T12:00:00.Z"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func deliveryMessagesAreGolden() throws {
        func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }
        #expect(Notifications.StreamStart.type == "notification.stream_start")
        #expect(try json(Notifications.StreamStart.Request(recipientId: "u1")) == #"{"recipientId":"u1"}"#)
        #expect(try json(Notifications.StreamStart.Reply(recipientKey: 42, headSeq: 7)) == #"{"headSeq":7,"recipientKey":42}"#)
        #expect(Notifications.Heads.type == "notification.heads")
        #expect(try json(Notifications.Heads.Request(recipientKeys: [42, 43])) == #"{"recipientKeys":[42,43]}"#)
        #expect(try json(Notifications.Heads.Reply(heads: [7, 0])) == #"{"heads":[7,0]}"#)
        let n = Notifications.Notification(
            id: "42-7", seq: 7, type: .post, detail: nil, createdAt: "2026-11-30T12:00:00.000Z", read: false,
            actorId: "u2", post: .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"), followState: nil)
        #expect(
            try json(n)
                == #"{"actorId":"u2","createdAt":"2026-11-30T12:00:00.000Z","id":"42-7","post":{"id":"p1","thumbnailURL":"https://img.example/p1.jpg"},"read":false,"seq":7,"type":"post"}"#
        )
    }
}

/// A subscriber collecting what it receives.
private final class Collector: Sendable {
    let items = Locked<[TopicItem]>([])
    let subscriber: TopicSubscriber
    private let task: Task<Void, any Error>

    init(context: ZMQContext, endpoint: String) {
        let items = self.items
        subscriber = TopicSubscriber(
            name: "test.sub", context: context, endpoints: [endpoint], service: "test",
            logger: Logger(service: "test", minimum: .error)
        ) { batch in items.withLock { $0 += batch } }
        let s = subscriber
        task = Task { try await s.run() }
    }

    func stop() { task.cancel() }

    var welcomes: [[UInt8]] {
        items.withLock { $0.compactMap { if case .welcome(let t) = $0 { t } else { nil } } }
    }
    var messages: [TopicMessage] {
        items.withLock { $0.compactMap { if case .message(let m) = $0 { m } else { nil } } }
    }

    /// Waits (60 s at most) until `condition` holds.
    func wait(_ what: String, _ condition: () -> Bool) async throws {
        try await eventually(what, intervalMs: 5) { condition() }
    }
}

private struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
