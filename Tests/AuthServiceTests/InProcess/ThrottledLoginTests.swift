import Testing

@testable import AuthService

/// Login throttling through `auth.login` (issue 11 point 8): a stranger cannot lock a user out.
/// The clock is moved by the test; nothing waits for a window to pass.
struct ThrottledLoginTests {
    static let attacker = "198.51.100.66"
    static let home = "192.0.2.10"

    func fail(_ auth: InProcessAuth, _ login: String, from address: String?, times: Int) async {
        for _ in 0..<times {
            await expectError("invalid_credentials", status: 401) {
                try await auth.login(login, "wrong password", from: address)
            }
        }
    }

    @Test func fiveWrongPasswordsFromOneAddressDoNotLockTheOwnerOutFromAnother() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice")
        await fail(auth, "alice", from: Self.attacker, times: 5)
        // The attacker's address is refused, even with the right password ...
        let refused = await expectError("too_many_attempts", status: 429) {
            try await auth.login("alice", from: Self.attacker)
        }
        #expect(refused?.retryAfter == 900)
        // ... while alice from her own address gets in, and keeps getting in.
        for _ in 0..<3 {
            #expect(try await auth.login("alice", from: Self.home).identity == alice.identity)
        }
        await expectError("too_many_attempts", status: 429) { try await auth.login("alice", from: Self.attacker) }
    }

    @Test func theUsernameAndTheEmailShareOneWindow() async throws {
        let auth = try InProcessAuth()
        try await auth.register("alice", email: "alice@example.com")
        await fail(auth, "alice", from: Self.attacker, times: 2)
        await fail(auth, "ALICE@Example.com", from: Self.attacker, times: 2)
        await fail(auth, " Alice ", from: Self.attacker, times: 1)
        for login in ["alice", "alice@example.com", "ALICE"] {
            await expectError("too_many_attempts", status: 429) { try await auth.login(login, from: Self.attacker) }
        }
        try await auth.login("alice@example.com", from: Self.home)
    }

    /// An identifier with no account is throttled exactly like an account, so the answers do
    /// not tell an attacker which usernames exist.
    @Test func unknownAccountsAreThrottledTheSameWay() async throws {
        let auth = try InProcessAuth()
        try await auth.register("alice")
        await fail(auth, "alice", from: Self.attacker, times: 5)
        await fail(auth, "ghost", from: Self.attacker, times: 5)
        let forAlice = await expectError("too_many_attempts", status: 429) {
            try await auth.login("alice", "wrong password", from: Self.attacker)
        }
        let forGhost = await expectError("too_many_attempts", status: 429) {
            try await auth.login("ghost", "anything at all", from: Self.attacker)
        }
        #expect(forGhost != nil)
        #expect(forAlice == forGhost)
        // Compared lower-cased, like a real identifier; other addresses are not affected.
        await expectError("too_many_attempts", status: 429) { try await auth.login("GHOST", from: Self.attacker) }
        await expectError("invalid_credentials", status: 401) { try await auth.login("ghost", from: Self.home) }
    }

    @Test func retryAfterIsTheTimeUntilTheLockEndsAndThenTheRightPasswordWorks() async throws {
        let auth = try InProcessAuth()
        try await auth.register("carol")
        for _ in 0..<5 {
            await fail(auth, "carol", from: Self.attacker, times: 1)
            auth.clock.advance(seconds: 100)
        }
        // Failures at 0, 100, ..., 400 s; now 500 s: the first leaves the window at 900 s.
        let refused = await expectError("too_many_attempts", status: 429) {
            try await auth.login("carol", from: Self.attacker)
        }
        #expect(refused?.retryAfter == 400)
        auth.clock.advance(seconds: 399)
        #expect(
            await expectError("too_many_attempts", status: 429) { try await auth.login("carol", from: Self.attacker) }?
                .retryAfter == 1)
        auth.clock.advance(seconds: 1)
        try await auth.login("carol", from: Self.attacker)
    }

    /// A successful login clears the failures of its (account, address) pair and nothing else.
    @Test func aSuccessfulLoginClearsOnlyThatPair() async throws {
        let auth = try InProcessAuth()
        try await auth.register("bob")
        await fail(auth, "bob", from: Self.home, times: 4)
        await fail(auth, "bob", from: Self.attacker, times: 4)
        try await auth.login("bob", from: Self.home)
        #expect(try await auth.count("login_failures") == 4)
        // From home a full new window of five ...
        await fail(auth, "bob", from: Self.home, times: 4)
        try await auth.login("bob", from: Self.home)
        await fail(auth, "bob", from: Self.home, times: 5)
        await expectError("too_many_attempts", status: 429) { try await auth.login("bob", from: Self.home) }
        // ... while the other address kept its four and locks at the fifth.
        await fail(auth, "bob", from: Self.attacker, times: 1)
        await expectError("too_many_attempts", status: 429) { try await auth.login("bob", from: Self.attacker) }
    }

    /// One address guessing over many accounts is stopped by the per-address limit (here 6,
    /// configured low so that the test needs few password checks), for every account, while
    /// the same accounts from elsewhere are unaffected.
    @Test func oneAddressGuessingOverManyAccountsIsStopped() async throws {
        let auth = try InProcessAuth { $0.throttlePolicy.maxFailuresPerAddress = 6 }
        try await auth.register("alice")
        try await auth.register("bob")
        await fail(auth, "alice", from: Self.attacker, times: 2)
        await fail(auth, "bob", from: Self.attacker, times: 2)
        await fail(auth, "ghost", from: Self.attacker, times: 2)
        for login in ["alice", "bob", "carol", "ghost"] {
            let refused = await expectError("too_many_attempts", status: 429) {
                try await auth.login(login, from: Self.attacker)
            }
            #expect(refused?.retryAfter == 900)
        }
        try await auth.login("alice", from: Self.home)
        try await auth.login("bob", from: Self.home)
    }

    /// Guesses spread over many addresses stop at the account's hourly ceiling (here 6,
    /// configured low; the default of 100 is tested on `LoginThrottle`). Past it the account
    /// refuses every address until the oldest failure is an hour old: the documented price.
    @Test func guessesFromManyAddressesStopAtTheAccountsHourlyCeiling() async throws {
        let auth = try InProcessAuth { $0.throttlePolicy.maxFailuresPerAccountPerHour = 6 }
        try await auth.register("dave")
        try await auth.register("erin")
        for i in 0..<6 {
            await fail(auth, "dave", from: "10.0.0.\(i)", times: 1)
            auth.clock.advance(seconds: 60)
        }
        let refused = await expectError("too_many_attempts", status: 429) {
            try await auth.login("dave", from: Self.home)
        }
        #expect(refused?.retryAfter == 3600 - 360)
        await expectError("too_many_attempts", status: 429) { try await auth.login("dave@example.com", from: "10.9.9.9") }
        try await auth.login("erin", from: "10.0.0.1")  // other accounts are not affected
        auth.clock.advance(seconds: 3600 - 360)
        try await auth.login("dave", from: Self.home)
    }
}
