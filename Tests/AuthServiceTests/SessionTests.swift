import Shared
import TestSupport
import Testing

/// Tokens: unknown, revoked and expired ones are rejected; logout of one session or all.
@Suite struct SessionTests {
    @Test func unknownTokensAreRejected() async throws {
        let auth = try await AuthFixture.start()
        try await auth.register("alice")
        for token in [
            "", "not-a-token", String(repeating: "A", count: 43), String(repeating: "x", count: 10_000),
        ] {
            await expectError("invalid_token", status: 401) { _ = try await auth.validate(token) }
            await expectError("invalid_token", status: 401) { _ = try await auth.logout(token) }
        }
    }

    @Test func logoutRevokesOnlyThatSession() async throws {
        let auth = try await AuthFixture.start()
        let first = try await auth.register("alice")
        let second = try await auth.login("alice")
        let reply = try await auth.logout(first.session.token)
        #expect(reply.userId == first.identity.id)
        #expect(reply.revokedSessionIds == [first.session.sessionId])
        await expectError("invalid_token", status: 401) {
            _ = try await auth.validate(first.session.token)
        }
        await expectError("invalid_token", status: 401) {
            _ = try await auth.logout(first.session.token)
        }
        #expect(try await auth.validate(second.session.token).sessionId == second.session.sessionId)
    }

    @Test func logoutOfAllSessionsRevokesEveryOne() async throws {
        let auth = try await AuthFixture.start()
        let first = try await auth.register("alice")
        let second = try await auth.login("alice")
        let third = try await auth.login("alice@example.com")
        let other = try await auth.register("bob")
        _ = try await auth.logout(first.session.token)  // already revoked: not listed again
        let reply = try await auth.logout(second.session.token, all: true)
        #expect(Set(reply.revokedSessionIds) == [second.session.sessionId, third.session.sessionId])
        #expect(reply.revokedSessionIds.count == 2)
        for token in [first.session.token, second.session.token, third.session.token] {
            await expectError("invalid_token", status: 401) { _ = try await auth.validate(token) }
        }
        #expect(try await auth.validate(other.session.token).userId == other.identity.id)
    }

    @Test func expiredTokensAreRejected() async throws {
        let auth = try await AuthFixture.start(["AUTH_SESSION_TTL_SECONDS": "1"])
        let reply = try await auth.register("alice")
        // Poll (bounded) until the one-second session has expired.
        let deadline = Timestamp.nowMs() + 15_000
        var expired = false
        while !expired && Timestamp.nowMs() < deadline {
            do {
                _ = try await auth.validate(reply.session.token)
                try await Task.sleep(for: .milliseconds(100))
            } catch let e as ServiceError where e.code == "invalid_token" {
                expired = true
            }
        }
        #expect(expired)
        await expectError("invalid_token", status: 401) {
            _ = try await auth.logout(reply.session.token)
        }
        // A fresh login still gets a (new, short) session.
        let again = try await auth.login("alice")
        #expect(again.session.token != reply.session.token)
    }

    /// Sessions that can no longer be used are deleted (AUTH_SESSION_PURGE_SECONDS); live ones stay.
    @Test func revokedAndExpiredSessionsArePurged() async throws {
        let auth = try await AuthFixture.start(["AUTH_SESSION_PURGE_SECONDS": "1"])
        let live = try await auth.register("alice")
        let other = try await auth.login("alice")
        _ = try await auth.logout(other.session.token)
        let sessions = { () throws -> Int64 in
            let db = try SQLiteConnection(path: "\(auth.cluster.dataDirectory)/auth.sqlite")
            return try db.queryOne("SELECT COUNT(*) FROM sessions")?.int(0) ?? -1
        }
        // Poll (bounded) for the next purge.
        let deadline = Timestamp.nowMs() + 15_000
        while try sessions() > 1 && Timestamp.nowMs() < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(try sessions() == 1)
        #expect(try await auth.validate(live.session.token).userId == live.identity.id)
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(other.session.token) }

        // And with one-second sessions, the live one goes too once it has expired.
        let short = try await AuthFixture.start(["AUTH_SESSION_PURGE_SECONDS": "1", "AUTH_SESSION_TTL_SECONDS": "1"])
        _ = try await short.register("bob")
        let shortSessions = { () throws -> Int64 in
            let db = try SQLiteConnection(path: "\(short.cluster.dataDirectory)/auth.sqlite")
            return try db.queryOne("SELECT COUNT(*) FROM sessions")?.int(0) ?? -1
        }
        let end = Timestamp.nowMs() + 15_000
        while try shortSessions() > 0 && Timestamp.nowMs() < end { try await Task.sleep(for: .milliseconds(100)) }
        #expect(try shortSessions() == 0)
    }
}
