import BackendKit
import CSodium
import Foundation
import Harness
import Messages
import Storage
import Support
import TestSupport
import Wire

@testable import AuthService

/// A clock the test moves by hand: throttling windows, session expiry and purges are tested by
/// moving it, never by waiting for real time to pass.
final class TestClock: Sendable {
    private let ms: Locked<Int64>

    /// Starts at an arbitrary fixed instant (2027-01-15), far from the real clock, so a test
    /// that read the real time instead would notice.
    init(startMs: Int64 = 1_800_000_000_000) { ms = Locked(startMs) }

    var now: Int64 { ms.withLock { $0 } }
    var clock: Clock { Clock(now: { self.now }) }

    func advance(ms delta: Int64) { ms.withLock { $0 += delta } }
    func advance(seconds: Int64) { advance(ms: seconds * 1000) }
}

/// AuthService assembled in process the way `AuthApp` assembles it, on a fresh temporary
/// database, with a `TestClock`: handlers are called directly, no sockets, no processes.
final class InProcessAuth: Sendable {
    let directory: String
    let database: Database
    let clock: TestClock
    let app: AuthApp
    let configuration: AuthConfiguration

    var accounts: AccountHandlers { app.accounts }
    var sessions: SessionHandlers { app.sessions }
    var throttle: LoginThrottle { app.sessions.throttle }

    /// The password every helper uses unless told otherwise.
    static let password = "correct horse"

    /// - Parameter configure: changes to the default configuration (limits, TTL).
    init(_ configure: (inout AuthConfiguration) -> Void = { _ in }) throws {
        _ = sodium_init()  // idempotent; `AuthApp.init(runtime:)` does it in the real service
        directory = NSTemporaryDirectory() + "auth-inprocess-\(RandomID.make().prefix(12))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        database = try Database(
            location: try TestStorage.location(directory, "auth"), producer: "auth", migrations: AuthSchema.migrations)
        clock = TestClock()
        var configuration = AuthConfiguration()
        configure(&configuration)
        self.configuration = configuration
        app = try AuthApp(
            configuration: configuration, database: database, logger: Logger(service: "auth-test", minimum: .error),
            clock: clock.clock)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// A request context as the host would make it, with a deadline a minute away (hashing on
    /// a busy machine must not fail a test about something else).
    static func context(_ type: String = "test") -> RequestContext {
        RequestContext(
            correlationId: RandomID.make(), type: type, deadline: Timestamp.nowMs() + 60_000, trace: RandomID.make(),
            logger: Logger(service: "auth-test", minimum: .error))
    }

    @discardableResult
    func register(_ username: String, email: String? = nil, password: String = InProcessAuth.password) async throws
        -> Auth.SessionReply
    {
        try await accounts.register(
            .init(email: email ?? "\(username)@example.com", username: username, password: password),
            Self.context(Auth.Register.type))
    }

    @discardableResult
    func login(_ login: String, _ password: String = InProcessAuth.password, from address: String? = nil)
        async throws -> Auth.SessionReply
    {
        try await sessions.login(
            .init(login: login, password: password, clientAddress: address), Self.context(Auth.Login.type))
    }

    func validate(_ token: String) async throws -> Auth.Validate.Reply {
        try await sessions.validate(.init(token: token))
    }

    @discardableResult
    func logout(_ token: String, all: Bool = false) async throws -> Auth.Logout.Reply {
        try await sessions.logout(.init(token: token, allSessions: all), Self.context(Auth.Logout.type))
    }

    func changeIdentity(_ userId: String, username: String? = nil, email: String? = nil) async throws -> Identity {
        try await accounts.changeIdentity(
            .init(userId: userId, username: username, email: email), Self.context(Auth.ChangeIdentity.type))
    }

    /// Every event in the outbox, oldest first: (seq, type, envelope bytes).
    func outbox() async throws -> [OutboxEvent] {
        try await database.outbox(after: 0, limit: 10_000).events
    }

    /// The bodies of the outbox events of type `E`, oldest first.
    func events<E: Event>(_ type: E.Type) async throws -> [E] {
        try await outbox().filter { $0.type == E.type }.map {
            try WireJSON.decode(EventEnvelope<E>.self, from: $0.envelope).body
        }
    }

    /// `SELECT COUNT(*)` of a table.
    func count(_ table: String) async throws -> Int64 {
        try await database.read { try $0.scalar("SELECT COUNT(*) FROM \(unescaped: table)") ?? -1 }
    }
}
