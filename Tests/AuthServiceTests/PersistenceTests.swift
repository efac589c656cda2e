import Foundation
import Shared
import TestSupport
import Testing

/// What survives a restart, and what must never be stored or logged in plain text.
@Suite struct PersistenceTests {
    @Test func accountsSessionsAndFailuresSurviveARestart() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        let revoked = try await auth.login("alice")
        _ = try await auth.logout(revoked.session.token)
        for _ in 0..<5 {
            await expectError("invalid_credentials", status: 401) {
                _ = try await auth.login("ghost", "wrong password")
            }
        }

        try await auth.restart()

        let session = try await auth.validate(alice.session.token)
        #expect(session.sessionId == alice.session.sessionId)
        #expect(session.username == "alice")
        await expectError("invalid_token", status: 401) {
            _ = try await auth.validate(revoked.session.token)
        }
        await expectError("username_taken", status: 409) {
            try await auth.register("alice", email: "x@example.com")
        }
        await expectError("too_many_attempts", status: 429) {
            _ = try await auth.login("ghost", "wrong password")
        }
        let again = try await auth.login("alice")
        #expect(again.identity == alice.identity)
        let lookup = try await auth.client.call(Auth.LookupUsers.self, .init(usernames: ["alice"]))
        #expect(lookup.users == [alice.identity])
    }

    @Test func committedStateAndEventsSurviveACrash() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        let bob = try await auth.register("bob")

        auth.cluster.kill("auth")  // SIGKILL: no clean shutdown
        try await auth.cluster.start("auth")
        try await waitUntilReachable(auth.client)

        #expect(try await auth.validate(bob.session.token).userId == bob.identity.id)
        let carol = try await auth.register("carol")
        // The outbox survived too: a new subscriber replays everything, sequence numbers continuing.
        let collector = EventCollector()
        let replay = try auth.cluster.client("auth", context: auth.context)
        let subscriber = EventSubscriber(
            producer: "auth", eventsEndpoint: try #require(auth.cluster.endpoints["auth"]?["events"]),
            context: auth.context, replay: replay, logger: Logger(service: "test", minimum: .error),
            startAfter: { 0 }, deliver: { collector.deliver($0) })
        let task = Task { try await subscriber.run() }
        defer {
            task.cancel()
            replay.shutdown()
        }
        #expect(await collector.waitFor(count: 3))
        let events = collector.events
        #expect(events.map(\.header.seq) == [1, 2, 3])
        let identities = try events.map { try $0.decode(Auth.UserRegistered.self).identity }
        #expect(identities == [alice.identity, bob.identity, carol.identity])
    }

    @Test func noPasswordOrTokenInTheDatabaseOrTheLog() async throws {
        let auth = try await AuthFixture.start(["LOG_LEVEL": "debug"])
        let password = "pw-\(RandomID.make())"
        let registered = try await auth.register("alice", password: password)
        let loggedIn = try await auth.login("alice", password)
        await expectError("invalid_credentials", status: 401) {
            _ = try await auth.login("alice", password + "x")
        }
        await expectError("invalid_credentials", status: 401) {
            _ = try await auth.login(password, password)
        }
        _ = try await auth.validate(loggedIn.session.token)
        _ = try await auth.logout(registered.session.token)
        let secrets = [password, registered.session.token, loggedIn.session.token]
        let directory = auth.cluster.dataDirectory
        let logPath = try #require(auth.cluster.processes["auth"]?.logPath)

        func databaseFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: directory).filter {
                $0.hasPrefix("auth.sqlite")
            }
            .map { "\(directory)/\($0)" }
        }
        func check(_ path: String) throws {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(!bytes.isEmpty || !path.hasSuffix(".sqlite"), "\(path) is empty")
            for secret in secrets {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "a secret appears in \(path)")
            }
        }
        // While running (the WAL holds recent writes) and after a clean stop (checkpointed).
        for path in try databaseFiles() + [logPath] { try check(path) }
        auth.cluster.stop("auth")
        for path in try databaseFiles() + [logPath] { try check(path) }

        // What is stored instead: an argon2id hash with OWASP's parameters and a 256-bit digest.
        let db = try SQLiteConnection(path: "\(directory)/auth.sqlite", readOnly: true)
        let hash = try #require(try db.queryOne("SELECT password_hash FROM users")?.string(0))
        #expect(hash.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        let digests = try db.query("SELECT token_hash FROM sessions").map { $0.string(0) }
        #expect(digests.count == 2)
        #expect(digests.allSatisfy { $0.count == 64 })
    }
}
