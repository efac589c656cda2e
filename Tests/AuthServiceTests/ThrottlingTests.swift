import Shared
import TestSupport
import Testing

/// Login throttling: 5 failures per account (or login identifier) within 15 minutes, then 429 with
/// `retryAfter`, the same for accounts that do not exist.
@Suite struct ThrottlingTests {
    func fail(_ auth: AuthFixture, _ login: String, times: Int) async {
        for _ in 0..<times {
            await expectError("invalid_credentials", status: 401) {
                _ = try await auth.login(login, "wrong password")
            }
        }
    }

    @Test func fiveFailuresLockTheIdentifierEvenForTheRightPassword() async throws {
        let auth = try await AuthFixture.start()
        try await auth.register("alice")
        await fail(auth, "alice", times: 5)
        let error = await expectError("too_many_attempts", status: 429) {
            _ = try await auth.login("alice")
        }
        let retryAfter = try #require(error?.retryAfter)
        #expect(retryAfter >= 1 && retryAfter <= 900)
        // The identifier is compared lower-cased.
        await expectError("too_many_attempts", status: 429) { _ = try await auth.login("ALICE") }
        // And failures count per account: the email does not open a second window of guesses.
        await expectError("too_many_attempts", status: 429) { _ = try await auth.login("Alice@Example.com") }
    }

    @Test func unknownAccountsAreThrottledTheSameWay() async throws {
        let auth = try await AuthFixture.start()
        await fail(auth, "ghost", times: 5)
        let error = await expectError("too_many_attempts", status: 429) {
            _ = try await auth.login("ghost", "anything at all")
        }
        #expect((error?.retryAfter ?? 0) >= 1)
    }

    @Test func aSuccessfulLoginClearsFailures() async throws {
        let auth = try await AuthFixture.start()
        try await auth.register("bob")
        await fail(auth, "bob", times: 4)
        _ = try await auth.login("bob")
        await fail(auth, "bob", times: 5)
        await expectError("too_many_attempts", status: 429) { _ = try await auth.login("bob") }
    }

    @Test func theLockEndsWithTheWindow() async throws {
        let auth = try await AuthFixture.start([
            "AUTH_LOGIN_WINDOW_SECONDS": "10", "AUTH_LOGIN_MAX_FAILURES": "3",
        ])
        try await auth.register("carol")
        await fail(auth, "carol", times: 3)
        let error = await expectError("too_many_attempts", status: 429) {
            _ = try await auth.login("carol")
        }
        #expect((error?.retryAfter ?? 0) <= 10)
        // Poll (bounded) until the window has passed and the right password works again.
        let deadline = Timestamp.nowMs() + 60_000
        var loggedIn = false
        while !loggedIn && Timestamp.nowMs() < deadline {
            do {
                _ = try await auth.login("carol")
                loggedIn = true
            } catch let e as ServiceError where e.code == "too_many_attempts" {
                try await Task.sleep(for: .milliseconds(500))  // waiting out a real clock window, not synchronising
            }
        }
        #expect(loggedIn)
    }
}
