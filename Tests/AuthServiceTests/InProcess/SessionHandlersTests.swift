import Harness
import Messages
import Support
import Testing
import Wire

@testable import AuthService

/// `auth.login`, `auth.validate`, `auth.logout` (SessionHandlers), in process, with the clock
/// moved by the test.
struct SessionHandlersTests {
    @Test func loginByUsernameOrEmailCaseInsensitively() async throws {
        let auth = try InProcessAuth()
        let registered = try await auth.register("alice", email: "alice@example.com")
        for login in ["alice", "ALICE", "alice@example.com", "Alice@EXAMPLE.com", "  alice  ", "\talice@example.com\n"] {
            let reply = try await auth.login(login)
            #expect(reply.identity == registered.identity)
            #expect(reply.session.token != registered.session.token)
            #expect(try await auth.validate(reply.session.token).userId == registered.identity.id)
        }
        #expect(try await auth.count("sessions") == 7)
    }

    @Test func unknownUserAndWrongPasswordGetTheSameAnswer() async throws {
        let auth = try InProcessAuth()
        try await auth.register("alice")
        let wrong = await expectError("invalid_credentials", status: 401) { try await auth.login("alice", "wrong password") }
        let unknown = await expectError("invalid_credentials", status: 401) {
            try await auth.login("nobody", "wrong password")
        }
        let unknownEmail = await expectError("invalid_credentials", status: 401) {
            try await auth.login("nobody@example.com", InProcessAuth.password)
        }
        #expect(wrong != nil)
        #expect(wrong == unknown)
        #expect(wrong == unknownEmail)
        #expect(try await auth.count("sessions") == 1)
    }

    /// A username typed with a character that only folds into the alphabet is not that
    /// username: U+212A KELVIN SIGN lower-cases to "k", but "\u{212A}elvin" is not "kelvin".
    @Test func aLoginThatOnlyFoldsIntoAUsernameDoesNotMatchIt() async throws {
        let auth = try InProcessAuth()
        try await auth.register("kelvin")
        await expectError("invalid_credentials", status: 401) { try await auth.login("\u{212A}elvin") }
        await expectError("invalid_credentials", status: 401) { try await auth.login("\u{212A}ELVIN") }
        #expect(try await auth.accounts.lookupUsers(.init(usernames: ["\u{212A}elvin"])).users.isEmpty)
        try await auth.login("KELVIN")
    }

    @Test func anOverlongPasswordIsRefusedBeforeAnythingElse() async throws {
        let auth = try InProcessAuth()
        try await auth.register("alice")
        for _ in 0..<10 {
            let error = await expectError("password_too_long", status: 400) {
                try await auth.login("alice", String(repeating: "p", count: 1025))
            }
            #expect(error?.fields?.map(\.field) == ["password"])
        }
        #expect(try await auth.count("login_failures") == 0)  // not a guess: never counted
        try await auth.login("alice")
    }

    @Test func unknownTokensAreRejected() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice")
        for token in [
            "", "not-a-token", String(repeating: "A", count: 43), String(repeating: "x", count: 10_000),
            alice.session.token + "x", String(alice.session.token.dropLast()), alice.session.sessionId,
        ] {
            await expectError("invalid_token", status: 401) { _ = try await auth.validate(token) }
            await expectError("invalid_token", status: 401) { try await auth.logout(token) }
        }
        #expect(try await auth.validate(alice.session.token).userId == alice.identity.id)
        #expect(try await auth.events(Auth.SessionRevoked.self).isEmpty)
    }

    @Test func logoutRevokesOnlyThatSessionAndEmitsAnEvent() async throws {
        let auth = try InProcessAuth()
        let first = try await auth.register("alice")
        let second = try await auth.login("alice")
        let reply = try await auth.logout(first.session.token)
        #expect(reply.userId == first.identity.id)
        #expect(reply.revokedSessionIds == [first.session.sessionId])
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(first.session.token) }
        await expectError("invalid_token", status: 401) { try await auth.logout(first.session.token) }
        #expect(try await auth.validate(second.session.token).sessionId == second.session.sessionId)
        let events = try await auth.events(Auth.SessionRevoked.self)
        #expect(events.count == 1)
        #expect(events.first?.userId == first.identity.id)
        #expect(events.first?.sessionIds == [first.session.sessionId])
    }

    @Test func logoutOfAllSessionsRevokesEveryLiveOneAndEmitsThemInOneEvent() async throws {
        let auth = try InProcessAuth()
        let first = try await auth.register("alice")
        let second = try await auth.login("alice")
        let third = try await auth.login("alice@example.com")
        let other = try await auth.register("bob")
        try await auth.logout(first.session.token)  // already revoked: not listed again
        let reply = try await auth.logout(second.session.token, all: true)
        #expect(reply.userId == first.identity.id)
        #expect(reply.revokedSessionIds.sorted() == [second.session.sessionId, third.session.sessionId].sorted())
        for token in [first.session.token, second.session.token, third.session.token] {
            await expectError("invalid_token", status: 401) { _ = try await auth.validate(token) }
        }
        #expect(try await auth.validate(other.session.token).userId == other.identity.id)
        let events = try await auth.events(Auth.SessionRevoked.self)
        #expect(events.map(\.sessionIds) == [[first.session.sessionId], reply.revokedSessionIds])
        #expect(events.allSatisfy { $0.userId == first.identity.id })
        #expect(
            try await auth.outbox().map(\.type) == [
                Auth.UserRegistered.type, Auth.UserRegistered.type, Auth.SessionRevoked.type, Auth.SessionRevoked.type,
            ])
    }

    @Test func expiredTokensAreRejectedAtTheirExpiryToTheMillisecond() async throws {
        let auth = try InProcessAuth { $0.sessionTTLSeconds = 3600 }
        let reply = try await auth.register("alice")
        #expect(reply.session.expiresAt == Timestamp.format(ms: auth.clock.now + 3_600_000))
        auth.clock.advance(ms: 3_600_000 - 1)
        #expect(try await auth.validate(reply.session.token).sessionId == reply.session.sessionId)
        auth.clock.advance(ms: 1)
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(reply.session.token) }
        await expectError("invalid_token", status: 401) { try await auth.logout(reply.session.token) }
        await expectError("invalid_token", status: 401) { try await auth.logout(reply.session.token, all: true) }
        #expect(try await auth.events(Auth.SessionRevoked.self).isEmpty)
        // A fresh login gets a new session that lives from now.
        let again = try await auth.login("alice")
        #expect(again.session.token != reply.session.token)
        #expect(try await auth.validate(again.session.token).userId == reply.identity.id)
    }

    /// Logging out of all sessions revokes the live ones only; an expired one is not listed.
    @Test func logoutOfAllSessionsLeavesExpiredOnesOut() async throws {
        let auth = try InProcessAuth { $0.sessionTTLSeconds = 60 }
        try await auth.register("alice")
        auth.clock.advance(seconds: 30)
        let live = try await auth.login("alice")
        auth.clock.advance(seconds: 30)  // the first session expires now
        let reply = try await auth.logout(live.session.token, all: true)
        #expect(reply.revokedSessionIds == [live.session.sessionId])
        #expect(try await auth.events(Auth.SessionRevoked.self).map(\.sessionIds) == [[live.session.sessionId]])
    }

    /// Requests that need no password check are answered while logins wait for the hashing
    /// slot: the slot is held by the test, so the logins are certainly waiting when the
    /// validation is asked (nothing here depends on how fast this machine hashes).
    @Test func validationIsAnsweredWhileLoginsWaitForTheHashingSlot() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice")
        let slots = AsyncSemaphore(permits: 1)
        let hasher = try PasswordHasher(concurrency: 1, queueLimit: 100, slots: slots)
        let handlers = SessionHandlers(
            accounts: SQLAccountStore(database: auth.database), sessions: SQLSessionStore(database: auth.database),
            hasher: hasher, throttle: auth.throttle, sessionTTLMs: 3_600_000, clock: auth.clock.clock)
        #expect(await slots.acquire())
        let logins = (0..<5).map { i in
            Task {
                try await handlers.login(
                    .init(login: "alice", password: InProcessAuth.password, clientAddress: "192.0.2.\(i)"),
                    InProcessAuth.context(Auth.Login.type))
            }
        }
        try await eventually("five logins queued for the slot") { await slots.waiting == 5 }
        #expect(try await handlers.validate(.init(token: alice.session.token)).userId == alice.identity.id)
        #expect(
            try await handlers.logout(.init(token: alice.session.token, allSessions: false), InProcessAuth.context())
                .revokedSessionIds == [alice.session.sessionId])
        #expect(await slots.waiting == 5)  // still queued: nothing above waited for them
        await slots.release()
        for login in logins { #expect(try await login.value.identity == alice.identity) }
    }
}
