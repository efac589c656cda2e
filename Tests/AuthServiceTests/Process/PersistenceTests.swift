import Foundation
import Harness
import Messages
import TestSupport
import Testing
import Wire

@testable import AuthService

/// What survives a restart and a crash of the real process, and what must never be stored or
/// logged in plain text.
@Suite(.serialized) struct PersistenceTests {
    static let attacker = "198.51.100.66"
    static let home = "192.0.2.10"

    @Test func accountsSessionsAndFailuresSurviveARestart() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        let revoked = try await auth.login("alice", from: Self.home)
        try await auth.logout(revoked.session.token)
        for _ in 0..<5 {
            await expectError("invalid_credentials", status: 401) {
                try await auth.login("alice", "wrong password", from: Self.attacker)
            }
        }

        try await auth.restart()

        let session = try await auth.validate(alice.session.token)
        #expect(session.sessionId == alice.session.sessionId)
        #expect(session.username == "alice")
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(revoked.session.token) }
        await expectError("username_taken", status: 409) { try await auth.register("alice", email: "x@example.com") }
        // The failures were stored: the attacker's address is still refused, alice's is not.
        await expectError("too_many_attempts", status: 429) { try await auth.login("alice", from: Self.attacker) }
        #expect(try await auth.login("alice", from: Self.home).identity == alice.identity)
        let lookup = try await auth.client.call(Auth.LookupUsers.self, .init(usernames: ["alice"]))
        #expect(lookup.users == [alice.identity])
    }

    /// Everything acknowledged before a SIGKILL is there afterwards: accounts, sessions and
    /// their events, with sequence numbers continuing.
    @Test func committedStateAndEventsSurviveASIGKILL() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        let bob = try await auth.register("bob")
        let bobAgain = try await auth.login("bob")
        let aliceRenamed = try await auth.client.call(
            Auth.ChangeIdentity.self, .init(userId: alice.identity.id, username: "alice2", email: nil))

        try await auth.crashAndRestart()

        #expect(try await auth.validate(alice.session.token).username == "alice2")
        #expect(try await auth.validate(bob.session.token).userId == bob.identity.id)
        #expect(try await auth.validate(bobAgain.session.token).sessionId == bobAgain.session.sessionId)
        await expectError("username_taken", status: 409) { try await auth.register("bob", email: "x@example.com") }
        try await auth.login("alice2")
        let carol = try await auth.register("carol")
        let events = try await auth.replay()
        #expect(events.map(\.seq) == [1, 2, 3, 4])
        #expect(
            events.map(\.type) == [
                Auth.UserRegistered.type, Auth.UserRegistered.type, Auth.IdentityChanged.type, Auth.UserRegistered.type,
            ])
        #expect(try eventBody(Auth.UserRegistered.self, events[0].envelope).identity == alice.identity)
        #expect(try eventBody(Auth.UserRegistered.self, events[1].envelope).identity == bob.identity)
        #expect(try eventBody(Auth.IdentityChanged.self, events[2].envelope).identity == aliceRenamed)
        #expect(try eventBody(Auth.UserRegistered.self, events[3].envelope).identity == carol.identity)
    }

    @Test func noPasswordOrTokenInTheDatabaseOrTheLogs() async throws {
        let auth = try await AuthFixture.start(["LOG_LEVEL": "debug"])
        let password = "pw-\(RandomID.make())"
        let address = "203.0.113.\(Int.random(in: 1...254))"
        let registered = try await auth.register("alice", password: password)
        let loggedIn = try await auth.login("alice", password, from: address)
        await expectError("invalid_credentials", status: 401) { try await auth.login("alice", password + "x") }
        // A password typed into the login field: the identifier is throttled, never stored as typed.
        await expectError("invalid_credentials", status: 401) { try await auth.login(password, password, from: address) }
        _ = try await auth.validate(loggedIn.session.token)
        try await auth.logout(registered.session.token)
        let secrets = [password, registered.session.token, loggedIn.session.token]
        let directory = auth.cluster.dataDirectory
        let logPath = try #require(auth.cluster.processes["auth"]?.logPath)

        func databaseFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("auth.sqlite") }
                .map { "\(directory)/\($0)" }
        }
        func check(_ path: String, also extra: [String] = []) throws {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(!bytes.isEmpty, "\(path) is empty")
            for secret in secrets + extra {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "a secret appears in \(path)")
            }
        }
        if TestStorage.engine == .sqlite {
            // While running (the WAL holds recent writes) and after a clean stop (checkpointed).
            let files = try databaseFiles()
            #expect(files.contains(auth.databasePath))
            for path in files { try check(path, also: [address]) }
        } else {
            // PostgreSQL: no stored value holds a secret or the address.
            let c = try TestStorage.location(directory, "auth").connect()
            for table in ["users", "sessions", "login_failures", "outbox"] {
                for row in try c.query("SELECT * FROM \(unescaped: table)") {
                    for case .text(let value) in row.values {
                        for secret in secrets + [address] { #expect(!value.contains(secret), "a secret appears in \(table)") }
                    }
                }
            }
        }
        try check(logPath)
        try await auth.stop()
        if TestStorage.engine == .sqlite {
            for path in try databaseFiles() { try check(path, also: [address]) }
        }
        try check(logPath)

        // What is stored instead: an argon2id hash with OWASP's parameters and 256-bit digests.
        let db = try TestStorage.location(directory, "auth").connect()
        let hash = try #require(try db.queryOne("SELECT password_hash FROM users")?.string("password_hash"))
        #expect(hash.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        // (The revoked session may already be purged: the first purge runs as the service starts.)
        let digests = try db.query("SELECT token_hash FROM sessions").map { try $0.string("token_hash") }
        #expect(digests.contains(SessionToken.digest(loggedIn.session.token)))
        #expect(digests.allSatisfy { $0.count == 64 && $0.allSatisfy(\.isHexDigit) })
        #expect(try db.scalar("SELECT COUNT(*) FROM login_failures") == 2)
    }
}
