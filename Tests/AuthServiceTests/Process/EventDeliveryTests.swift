import BackendKit
import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import TestSupport
import Testing
import Transport

/// A durable subscriber (Shared's `EventSubscriber`, as the other services use it) to the real
/// AuthService, recording what it applies in its own database.
final class RecordingSubscriber: Sendable {
    let database: Database
    /// (seq, type) of every event applied, in commit order; a repeat would show here twice.
    let applied = Locked<[(seq: Int64, type: String)]>([])
    private let endpoints: (rpc: String, events: String)
    private let context: ZMQContext
    private let security: TransportSecurity

    init(auth: AuthFixture, directory: String) throws {
        endpoints = try auth.endpoints
        context = auth.context
        security = try auth.cluster.security(context: auth.context)
        database = try Database(
            location: try TestStorage.location(directory, "subscriber"), producer: nil,
            migrations: [
                Migration(
                    "test.1-seen", "CREATE TABLE seen(seq INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL)")
            ])
    }

    /// Runs a subscriber until the returned stop function is called (the cursor is kept in the
    /// database, so the next run continues where this one stopped).
    func run() throws -> @Sendable () async -> Void {
        let replay = try RPCClient(
            service: "auth", endpoint: endpoints.rpc, context: context, logger: Logger(service: "test", minimum: .error),
            security: security, defaultTimeoutMs: AuthFixture.timeoutMs)
        let subscriber = EventSubscriber(
            producer: .auth, endpoint: endpoints.events, context: context, replay: replay, database: database,
            logger: Logger(service: "test-subscriber", minimum: .error), security: security)
        subscriber.on(Auth.UserRegistered.self) { [self] in try record($0, $0.body.identity.username, $1) }
        subscriber.on(Auth.IdentityChanged.self) { [self] in try record($0, $0.body.identity.username, $1) }
        subscriber.on(Auth.SessionRevoked.self) { [self] in
            try record($0, $0.body.sessionIds.sorted().joined(separator: ","), $1)
        }
        let task = Task { try await subscriber.run() }
        return {
            task.cancel()
            _ = await task.result
            replay.shutdown()
        }
    }

    private func record<E: Event>(_ event: Delivered<E>, _ body: String, _ tx: Transaction) throws -> EventOutcome {
        try tx.query("INSERT INTO seen(seq, type, body) VALUES (\(event.header.seq), \(event.header.type), \(body))")
        let applied = self.applied
        let entry = (seq: event.header.seq, type: event.header.type)
        tx.onCommit { applied.withLock { $0.append(entry) } }
        return .applied
    }

    var seqs: [Int64] { applied.withLock { $0.map(\.seq) } }

    /// Waits (bounded, 60 s) until `count` events have been applied.
    func waitFor(_ count: Int) async throws {
        try await eventually("\(count) events applied") { applied.withLock { $0.count } >= count }
    }

    /// What the handlers wrote: (seq, type, body) in seq order.
    func seen() async throws -> [(seq: Int64, type: String, body: String)] {
        try await database.read { c in
            try c.query("SELECT seq, type, body FROM seen ORDER BY seq").map {
                (try $0.int64("seq"), try $0.string("type"), try $0.string("body"))
            }
        }
    }
}

/// Events reach a subscriber that was offline when they were committed: every one, once, in
/// order, across a restart of the producer and of the subscriber.
@Suite(.serialized) struct EventDeliveryTests {
    @Test func aSubscriberThatWasOfflineGetsEveryEventOnceInOrder() async throws {
        let auth = try await AuthFixture.start()
        var registered: [Auth.SessionReply] = []
        for name in ["alice", "bob", "carol", "dave"] { registered.append(try await auth.register(name)) }
        _ = try await auth.client.call(
            Auth.ChangeIdentity.self, .init(userId: registered[0].identity.id, username: "alice2", email: nil))
        let second = try await auth.login("bob")
        let logout = try await auth.logout(second.session.token, all: true)

        // Only now does a subscriber start: it catches up from its (empty) cursor.
        let subscriber = try RecordingSubscriber(auth: auth, directory: auth.cluster.dataDirectory)
        let stop = try subscriber.run()
        try await subscriber.waitFor(6)
        let revoked = [registered[1].session.sessionId, second.session.sessionId].sorted().joined(separator: ",")
        #expect(logout.revokedSessionIds.sorted().joined(separator: ",") == revoked)
        let expected: [(Int64, String, String)] = [
            (1, Auth.UserRegistered.type, "alice"), (2, Auth.UserRegistered.type, "bob"),
            (3, Auth.UserRegistered.type, "carol"), (4, Auth.UserRegistered.type, "dave"),
            (5, Auth.IdentityChanged.type, "alice2"), (6, Auth.SessionRevoked.type, revoked),
        ]
        var seen = try await subscriber.seen()
        #expect(seen.map { "\($0.seq) \($0.type) \($0.body)" } == expected.map { "\($0.0) \($0.1) \($0.2)" })

        // Live events follow without repeats.
        try await auth.register("eve")
        try await subscriber.waitFor(7)
        #expect(subscriber.seqs == Array(1...7))

        // The subscriber goes away; events are committed while it is gone, and the producer
        // restarts in between. The next run continues from the stored cursor.
        await stop()
        try await auth.register("frank")
        try await auth.restart()
        try await auth.register("grace")
        let stopAgain = try subscriber.run()
        defer { Task { await stopAgain() } }
        try await subscriber.waitFor(9)
        #expect(subscriber.seqs == Array(1...9))
        seen = try await subscriber.seen()
        #expect(seen.suffix(2).map(\.body) == ["frank", "grace"])
    }
}
