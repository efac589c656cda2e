import Messages
import Storage
import Testing
import Wire

@testable import AuthService

/// The SQLite stores on a temporary database with AuthService's migrations: what each
/// statement writes, and that a state change and its event commit together or not at all.
struct StoreTests {
    let auth: InProcessAuth
    var database: Database { auth.database }
    var accounts: SQLAccountStore { SQLAccountStore(database: database) }
    var sessions: SQLSessionStore { SQLSessionStore(database: database) }
    var failures: SQLLoginFailureStore { SQLLoginFailureStore(database: database) }
    static let t0: Int64 = 1_800_000_000_000

    init() throws { auth = try InProcessAuth() }

    static func identity(_ username: String) -> Identity {
        Identity(id: "id-\(username)", username: username, email: "\(username)@example.com", version: 1)
    }

    static func session(_ id: String, user: String, at createdAt: Int64 = t0, ttlMs: Int64 = 60_000) -> NewSession {
        NewSession(
            id: id, tokenDigest: SessionToken.digest("token-\(id)"), userId: "id-\(user)", createdAt: createdAt,
            expiresAt: createdAt + ttlMs)
    }

    func register(_ username: String) async throws {
        try await accounts.register(
            Self.identity(username), passwordHash: "$argon2id$stub", session: Self.session("s-\(username)", user: username))
    }

    // MARK: Accounts

    @Test func registerStoresTheAccountItsSessionAndItsEventTogether() async throws {
        try await register("alice")
        let stored = try #require(try await accounts.account(login: "alice"))
        #expect(stored.identity == Self.identity("alice"))
        #expect(stored.passwordHash == "$argon2id$stub")
        #expect(try await accounts.account(login: "alice@example.com")?.identity == Self.identity("alice"))
        #expect(try await accounts.account(login: "nobody") == nil)
        let session = try await sessions.validate(tokenDigest: SessionToken.digest("token-s-alice"), now: Self.t0)
        #expect(session?.userId == "id-alice")
        #expect(try await auth.events(Auth.UserRegistered.self).map(\.identity) == [Self.identity("alice")])
    }

    @Test func aRegistrationThatConflictsWritesNothing() async throws {
        try await register("alice")
        var clash = Self.identity("alice")
        clash.id = "id-other"
        clash.email = "other@example.com"
        await expectError("username_taken", status: 409) {
            try await accounts.register(clash, passwordHash: "x", session: Self.session("s-other", user: "other"))
        }
        #expect(try await auth.count("users") == 1)
        #expect(try await auth.count("sessions") == 1)
        #expect(try await auth.outbox().count == 1)
        let conflict = await expectError("email_taken", status: 409) {
            try await accounts.ensureAvailable(email: "alice@example.com", username: "alice", excluding: nil)
        }
        #expect(conflict?.fields?.map(\.code) == ["email_taken", "username_taken"])
        // The account itself is not a conflict with itself.
        try await accounts.ensureAvailable(email: "alice@example.com", username: "alice", excluding: "id-alice")
    }

    @Test func identitiesByIdAndUsernameEachOnce() async throws {
        for name in ["alice", "bob", "carol"] { try await register(name) }
        let found = try await accounts.identities(ids: ["id-bob", "id-nobody"], usernames: ["bob", "carol", "zed"])
        #expect(found == [Self.identity("bob"), Self.identity("carol")])
        #expect(try await accounts.identities(ids: [], usernames: []).isEmpty)
    }

    @Test func changeIdentityBumpsTheVersionAndEmitsOnlyWhenSomethingChanged() async throws {
        try await register("alice")
        let (same, unchanged) = try await accounts.changeIdentity(userId: "id-alice", username: "alice", email: nil)
        #expect(!unchanged)
        #expect(same == Self.identity("alice"))
        let (renamed, changed) = try await accounts.changeIdentity(userId: "id-alice", username: "alicia", email: nil)
        #expect(changed)
        #expect(renamed == Identity(id: "id-alice", username: "alicia", email: "alice@example.com", version: 2))
        #expect(try await accounts.account(login: "alicia")?.identity == renamed)
        #expect(try await auth.events(Auth.IdentityChanged.self).map(\.identity) == [renamed])
        await expectError("not_found", status: 404) {
            _ = try await accounts.changeIdentity(userId: "id-nobody", username: "x", email: nil)
        }
    }

    // MARK: Sessions

    @Test func validateAnswersOnlyLiveSessions() async throws {
        try await register("alice")
        let digest = SessionToken.digest("token-s-alice")
        #expect(try await sessions.validate(tokenDigest: digest, now: Self.t0 + 59_999)?.sessionId == "s-alice")
        #expect(try await sessions.validate(tokenDigest: digest, now: Self.t0 + 60_000) == nil)
        #expect(try await sessions.validate(tokenDigest: SessionToken.digest("token-other"), now: Self.t0) == nil)
        let reply = try #require(try await sessions.validate(tokenDigest: digest, now: Self.t0))
        let expected = Auth.Validate.Reply(
            userId: "id-alice", sessionId: "s-alice", username: "alice", expiresAt: Timestamp.format(ms: Self.t0 + 60_000))
        #expect(reply == expected)
    }

    @Test func revokeOneOrAllLiveSessionsWithOneEvent() async throws {
        try await register("alice")
        try await register("bob")
        let key = LoginThrottle.key(accountId: "id-alice", login: "alice", clientAddress: nil)
        try await sessions.start(Self.session("s2", user: "alice", at: Self.t0 + 1), clearing: key)
        try await sessions.start(Self.session("s3", user: "alice", at: Self.t0 + 2), clearing: key)
        try await sessions.start(Self.session("old", user: "alice", at: Self.t0 - 60_000), clearing: key)  // expired
        let one = try await sessions.revoke(tokenDigest: SessionToken.digest("token-s2"), allSessions: false, now: Self.t0 + 10)
        #expect(one?.revokedSessionIds == ["s2"])
        #expect(
            try await sessions.revoke(tokenDigest: SessionToken.digest("token-s2"), allSessions: true, now: Self.t0 + 10) == nil)
        let all = try await sessions.revoke(tokenDigest: SessionToken.digest("token-s3"), allSessions: true, now: Self.t0 + 10)
        #expect(all?.userId == "id-alice")
        #expect(all?.revokedSessionIds == ["s-alice", "s3"])  // live ones only, oldest first
        #expect(try await sessions.validate(tokenDigest: SessionToken.digest("token-s-bob"), now: Self.t0 + 10) != nil)
        let events = try await auth.events(Auth.SessionRevoked.self)
        #expect(events.map(\.sessionIds) == [["s2"], ["s-alice", "s3"]])
    }

    @Test func startingASessionClearsOnlyThatPairsFailures() async throws {
        try await register("alice")
        let pair = LoginThrottle.key(accountId: "id-alice", login: "alice", clientAddress: "192.0.2.1")
        let otherAddress = LoginThrottle.key(accountId: "id-alice", login: "alice", clientAddress: "192.0.2.2")
        let otherAccount = LoginThrottle.key(accountId: "id-bob", login: "bob", clientAddress: "192.0.2.1")
        for key in [pair, pair, otherAddress, otherAccount] {
            try await failures.record(key, now: Self.t0, keepAfter: 0)
        }
        try await sessions.start(Self.session("s2", user: "alice"), clearing: pair)
        let left = try await failures.recent(pair, pairSince: 0, addressSince: 0, accountSince: 0)
        #expect(left.pair.isEmpty)
        #expect(left.address == [Self.t0])  // bob's from the same address
        #expect(left.account == [Self.t0])  // alice's from the other address
    }

    @Test func purgeDeletesExpiredAndRevokedSessionsInBatches() async throws {
        for name in ["a", "b", "c", "d", "e", "f"] { try await register(name) }  // live until t0 + 60 s
        _ = try await sessions.revoke(tokenDigest: SessionToken.digest("token-s-a"), allSessions: false, now: Self.t0)
        _ = try await sessions.revoke(tokenDigest: SessionToken.digest("token-s-b"), allSessions: false, now: Self.t0)
        let key = LoginThrottle.key(accountId: "id-c", login: "c", clientAddress: nil)
        try await sessions.start(Self.session("late", user: "c", at: Self.t0 + 30_000), clearing: key)
        #expect(try await sessions.purge(now: Self.t0, limit: 1) == 1)
        #expect(try await sessions.purge(now: Self.t0, limit: 10) == 1)
        #expect(try await sessions.purge(now: Self.t0, limit: 10) == 0)
        #expect(try await auth.count("sessions") == 5)
        // At t0 + 60 s the first sessions expire; "late" lives on.
        #expect(try await sessions.purge(now: Self.t0 + 60_000, limit: 3) == 3)
        #expect(try await sessions.purge(now: Self.t0 + 60_000, limit: 3) == 1)
        let left = try await database.read { try $0.query("SELECT id FROM sessions").map { try $0.string("id") } }
        #expect(left == ["late"])
    }

    // MARK: Login failures

    @Test func recentFailuresAreCountedPerPairAddressAndAccountWithinTheirWindows() async throws {
        let alice = LoginThrottle.key(accountId: "id-alice", login: "alice", clientAddress: "A")
        let aliceFromB = LoginThrottle.key(accountId: "id-alice", login: "alice", clientAddress: "B")
        let bob = LoginThrottle.key(accountId: "id-bob", login: "bob", clientAddress: "A")
        try await failures.record(alice, now: 100, keepAfter: 0)
        try await failures.record(alice, now: 200, keepAfter: 0)
        try await failures.record(aliceFromB, now: 300, keepAfter: 0)
        try await failures.record(bob, now: 400, keepAfter: 0)
        let all = try await failures.recent(alice, pairSince: 0, addressSince: 0, accountSince: 0)
        #expect(all.pair == [100, 200])
        #expect(all.address == [100, 200, 400])
        #expect(all.account == [100, 200, 300])
        // Each window is exclusive of its start, and each has its own.
        let some = try await failures.recent(alice, pairSince: 100, addressSince: 200, accountSince: 300)
        #expect(some.pair == [200])
        #expect(some.address == [400])
        #expect(some.account == [])
    }

    @Test func recordingAFailureDeletesTheOnesNoWindowNeeds() async throws {
        let key = LoginThrottle.key(accountId: nil, login: "ghost", clientAddress: "A")
        for at: Int64 in [100, 200, 300] { try await failures.record(key, now: at, keepAfter: 0) }
        try await failures.record(key, now: 400, keepAfter: 200)
        let left = try await failures.recent(key, pairSince: 0, addressSince: 0, accountSince: 0)
        #expect(left.pair == [300, 400])
    }

    @Test func neitherTheLoginNorTheAddressIsStoredAsTyped() async throws {
        let key = LoginThrottle.key(accountId: nil, login: "my secret password", clientAddress: "203.0.113.5")
        try await failures.record(key, now: Self.t0, keepAfter: 0)
        let row = try #require(
            try await database.read { try $0.queryOne("SELECT account_key, address_key FROM login_failures") })
        let stored = [try row.string("account_key"), try row.string("address_key")]
        #expect(stored == [key.account, key.address])
        #expect(stored.allSatisfy { !$0.contains("secret") && !$0.contains("203.0.113") && $0.count == 64 })
    }
}
