import Support
import Testing
import Wire

@testable import AuthService

/// `LoginThrottle` with its SQLite store and the default policy (5 per account and address in
/// 15 minutes, 50 per address, 100 per account per hour), driven by a clock the test moves:
/// every window is crossed by moving the clock, never by waiting.
struct LoginThrottleTests {
    let auth: InProcessAuth
    var throttle: LoginThrottle { auth.throttle }
    var clock: TestClock { auth.clock }
    static let failure = SessionHandlers.invalidCredentials

    init() throws { auth = try InProcessAuth() }

    static func key(_ account: String, _ address: String) -> LoginFailureKey {
        LoginThrottle.key(accountId: account, login: account, clientAddress: address)
    }

    /// One attempt whose check fails (recorded as a failure unless refused first).
    /// - Returns: the error: `invalid_credentials` when the attempt ran, else the refusal.
    @discardableResult
    func fail(_ key: LoginFailureKey) async -> ServiceError? {
        do {
            try await throttle.attempt(key, failure: Self.failure) { throw Self.failure }
            return nil
        } catch {
            return error as? ServiceError
        }
    }

    /// Whether an attempt with the right password would be let through (its body run).
    func admitted(_ key: LoginFailureKey) async throws -> Bool {
        do {
            return try await throttle.attempt(key, failure: Self.failure) { true }
        } catch let error as ServiceError where error.code == "too_many_attempts" {
            return false
        }
    }

    /// The refusal an attempt for `key` gets now (nil when admitted).
    func refusal(_ key: LoginFailureKey) async throws -> ServiceError? {
        do {
            _ = try await throttle.attempt(key, failure: Self.failure) { true }
            return nil
        } catch let error as ServiceError where error.code == "too_many_attempts" {
            return error
        }
    }

    @Test func theDefaultPolicyIsOWASPsAndASVSs() throws {
        let policy = try AuthConfiguration(env: Environment([:])).throttlePolicy
        #expect(policy.maxFailuresPerAccountAndAddress == 5)
        #expect(policy.windowSeconds == 900)
        #expect(policy.maxFailuresPerAddress == 50)
        #expect(policy.maxFailuresPerAccountPerHour == 100)
        #expect(throttle.policy.maxFailuresPerAccountPerHour == 100)
    }

    @Test func fiveFailuresLockThePairButNotTheSameAccountFromAnotherAddress() async throws {
        let fromA = Self.key("alice", "192.0.2.1")
        let fromB = Self.key("alice", "198.51.100.7")
        for _ in 0..<4 { #expect(await fail(fromA)?.code == "invalid_credentials") }
        #expect(try await admitted(fromA))  // 4 < 5: still let through
        #expect(await fail(fromA)?.code == "invalid_credentials")
        let refused = try #require(try await refusal(fromA))
        #expect(refused.status == 429)
        #expect(refused.retryAfter == 900)
        #expect(try await admitted(fromB))
        // The refused attempt ran nothing: the body is not called at all.
        let ran = Locked(false)
        await expectError("too_many_attempts", status: 429) {
            try await throttle.attempt(fromA, failure: Self.failure) { ran.withLock { $0 = true } }
        }
        #expect(!ran.withLock { $0 })
    }

    @Test func retryAfterCountsFromTheOldestFailureAndTheLockEndsWithTheWindow() async throws {
        let key = Self.key("alice", "192.0.2.1")
        for _ in 0..<5 {
            await fail(key)
            clock.advance(seconds: 60)
        }
        // Failures at 0, 60, ..., 240 s; now 300 s: the one at 0 leaves the window at 900 s.
        #expect(try await refusal(key)?.retryAfter == 600)
        clock.advance(ms: 600_000 - 1_001)
        #expect(try await refusal(key)?.retryAfter == 2)
        clock.advance(ms: 1_000)
        #expect(try await refusal(key)?.retryAfter == 1)  // 1 ms left still says 1 s, never 0
        clock.advance(ms: 1)
        #expect(try await admitted(key))
        // One more failure fills the window again, until the failure at 60 s leaves it.
        #expect(await fail(key)?.code == "invalid_credentials")
        #expect(try await refusal(key)?.retryAfter == 60)
    }

    /// Refused attempts are not failures: hammering a locked pair does not extend its lock.
    @Test func refusedAttemptsAreNotCounted() async throws {
        let key = Self.key("alice", "192.0.2.1")
        for _ in 0..<5 { await fail(key) }
        var codes: [String?] = []
        for _ in 0..<50 {
            clock.advance(seconds: 10)
            codes.append(await fail(key)?.code)
        }
        #expect(codes == Array(repeating: "too_many_attempts", count: 50))
        clock.advance(seconds: 400)  // 900 s after the five failures
        #expect(try await admitted(key))
        #expect(try await auth.count("login_failures") == 5)
    }

    @Test func onlyTheGivenFailureIsCounted() async throws {
        let key = Self.key("alice", "192.0.2.1")
        let busy = ServiceError(code: "busy", message: "too many password checks", status: 503, retryAfter: 1)
        for _ in 0..<20 {
            await expectError("busy", status: 503) {
                try await throttle.attempt(key, failure: Self.failure) { throw busy }
            }
        }
        #expect(try await admitted(key))
        #expect(try await auth.count("login_failures") == 0)
    }

    @Test func oneAddressIsLimitedAcrossAccounts() async throws {
        let address = "203.0.113.9"
        // 49 failures over 49 accounts, one each: no pair is near its limit.
        for i in 0..<49 { await fail(Self.key("user\(i)", address)) }
        #expect(try await admitted(Self.key("fresh", address)))
        await fail(Self.key("user49", address))
        // The 50th failure from the address closes it for every account, even a fresh one ...
        let refused = try #require(try await refusal(Self.key("fresh", address)))
        #expect(refused.retryAfter == 900)
        #expect(try await refusal(Self.key("user0", address)) != nil)
        // ... while the same accounts from another address are untouched.
        #expect(try await admitted(Self.key("user0", "203.0.113.10")))
        #expect(try await admitted(Self.key("fresh", "203.0.113.10")))
        clock.advance(seconds: 900)
        #expect(try await admitted(Self.key("fresh", address)))
    }

    /// ASVS V2.2.1: no more than 100 failed attempts per hour per account, however many
    /// addresses they come from.
    @Test func oneAccountIsLimitedToAHundredFailuresAnHourAcrossAddresses() async throws {
        // 100 addresses, one failure each, 30 s apart: every pair and address stays under its
        // limit, and the failures older than 15 minutes no longer count for them.
        var codes: [String?] = []
        for i in 0..<99 {
            codes.append(await fail(Self.key("alice", "10.0.0.\(i)"))?.code)
            clock.advance(seconds: 30)
        }
        #expect(codes == Array(repeating: "invalid_credentials", count: 99))
        #expect(try await admitted(Self.key("alice", "10.0.1.1")))
        #expect(await fail(Self.key("alice", "10.0.0.99"))?.code == "invalid_credentials")
        // Failures at 0, 30, ..., 2,970 s; now 2,970 s: the first leaves the hour at 3,600 s.
        let refused = try #require(try await refusal(Self.key("alice", "10.0.1.1")))
        #expect(refused.retryAfter == 630)
        #expect(try await refusal(Self.key("alice", "10.0.0.0")) != nil)
        #expect(try await admitted(Self.key("bob", "10.0.1.1")))  // other accounts are not affected
        clock.advance(seconds: 630)
        #expect(try await admitted(Self.key("alice", "10.0.1.1")))
    }

    /// The lock is taken per (account, address): concurrent guesses for one pair cannot slip
    /// past its limit.
    @Test func concurrentGuessesForOnePairGetExactlyTheLimit() async throws {
        let key = Self.key("alice", "192.0.2.1")
        let codes = await withTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    do {
                        try await throttle.attempt(key, failure: Self.failure) {
                            try await Task.sleep(for: .milliseconds(1))  // a check that takes time
                            throw Self.failure
                        }
                        return "ok"
                    } catch {
                        return (error as? ServiceError)?.code ?? "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        #expect(codes == ["invalid_credentials": 5, "too_many_attempts": 15])
    }

    @Test func keysNameTheAccountWhenOneMatchesElseTheIdentifierAndStoreNeitherAsTyped() {
        let byUsername = LoginThrottle.key(accountId: "u1", login: "alice", clientAddress: "192.0.2.1")
        let byEmail = LoginThrottle.key(accountId: "u1", login: "alice@example.com", clientAddress: "192.0.2.1")
        #expect(byUsername == byEmail)
        let unknown = LoginThrottle.key(accountId: nil, login: "alice", clientAddress: "192.0.2.1")
        #expect(unknown.account != byUsername.account)
        #expect(unknown.address == byUsername.address)
        #expect(LoginThrottle.key(accountId: nil, login: "ghost", clientAddress: "192.0.2.2").address != unknown.address)
        for part in [byUsername.account, byUsername.address, unknown.account] {
            #expect(part.count == 64 && part.allSatisfy(\.isHexDigit))
        }
    }
}
