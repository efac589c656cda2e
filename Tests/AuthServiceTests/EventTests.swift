import Shared
import TestSupport
import Testing

/// Events through the outbox reach a subscriber that was offline when they were published:
/// all of them, once each, in order.
@Suite struct EventTests {
    @Test func aLateSubscriberGetsEveryEventOnceInOrder() async throws {
        let auth = try await AuthFixture.start()
        var registered: [Auth.SessionReply] = []
        for name in ["alice", "bob", "carol", "dave"] {
            registered.append(try await auth.register(name))
        }
        let changed = try await auth.client.call(
            Auth.ChangeIdentity.self,
            .init(userId: registered[0].identity.id, username: "alice2", email: nil))
        let second = try await auth.login("bob")
        let logout = try await auth.logout(second.session.token, all: true)

        // Only now does a subscriber start, from the beginning.
        let collector = EventCollector()
        let replay = try auth.cluster.client("auth", context: auth.context)
        let subscriber = EventSubscriber(
            producer: "auth", eventsEndpoint: try #require(auth.cluster.endpoints["auth"]?["events"]),
            context: auth.context,
            replay: replay, logger: Logger(service: "test", minimum: .error), startAfter: { 0 },
            deliver: { collector.deliver($0) })
        let task = Task { try await subscriber.run() }
        defer {
            task.cancel()
            replay.shutdown()
        }
        #expect(await collector.waitFor(count: 6))
        let events = collector.events
        #expect(events.map(\.header.seq) == [1, 2, 3, 4, 5, 6])
        #expect(events.map(\.header.producer) == Array(repeating: "auth", count: 6))
        #expect(
            events.prefix(4).map(\.header.type) == Array(repeating: Auth.UserRegistered.type, count: 4))
        let identities = try events.prefix(4).map { try $0.decode(Auth.UserRegistered.self).identity }
        #expect(identities == registered.map(\.identity))
        #expect(events[4].header.type == Auth.IdentityChanged.type)
        #expect(try events[4].decode(Auth.IdentityChanged.self).identity == changed)
        #expect(events[5].header.type == Auth.SessionRevoked.type)
        let revoked = try events[5].decode(Auth.SessionRevoked.self)
        #expect(revoked.userId == registered[1].identity.id)
        #expect(Set(revoked.sessionIds) == Set(logout.revokedSessionIds))
        #expect(Set(revoked.sessionIds) == [registered[1].session.sessionId, second.session.sessionId])

        // Live events follow, without duplicates of the replayed ones.
        let eve = try await auth.register("eve")
        #expect(await collector.waitFor(count: 7))
        let all = collector.events
        #expect(all.count == 7)
        #expect(all.map(\.header.seq) == [1, 2, 3, 4, 5, 6, 7])
        #expect(try all[6].decode(Auth.UserRegistered.self).identity == eve.identity)
    }
}
