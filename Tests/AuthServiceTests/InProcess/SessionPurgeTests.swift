import Harness
import Testing

@testable import AuthService

/// `SessionPurge` with the injected clock: sessions that can no longer be used are deleted,
/// live ones stay, in batches; the background service purges at once when it starts.
struct SessionPurgeTests {
    @Test func revokedAndExpiredSessionsAreDeletedAndLiveOnesStay() async throws {
        let auth = try InProcessAuth { $0.sessionTTLSeconds = 3600 }
        let live = try await auth.register("alice")
        let revoked = try await auth.login("alice")
        try await auth.logout(revoked.session.token)
        #expect(try await auth.app.purge.purge() == 1)
        #expect(try await auth.count("sessions") == 1)
        #expect(try await auth.validate(live.session.token).userId == live.identity.id)
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(revoked.session.token) }

        // Half an hour later bob logs in; at one hour alice's session expires, bob's does not.
        auth.clock.advance(seconds: 1800)
        let bob = try await auth.register("bob")
        #expect(try await auth.app.purge.purge() == 0)
        auth.clock.advance(seconds: 1800)
        #expect(try await auth.app.purge.purge() == 1)
        #expect(try await auth.count("sessions") == 1)
        #expect(try await auth.validate(bob.session.token).userId == bob.identity.id)
    }

    @Test func aLargePurgeRunsInBatchesUntilNothingIsLeft() async throws {
        let auth = try InProcessAuth { $0.sessionTTLSeconds = 60 }
        try await auth.register("alice")
        for _ in 0..<6 { try await auth.login("alice") }
        var purge = auth.app.purge
        purge.batch = 2
        #expect(try await purge.purge() == 0)
        auth.clock.advance(seconds: 60)
        #expect(try await purge.purge() == 7)  // 2 + 2 + 2 + 1
        #expect(try await auth.count("sessions") == 0)
    }

    @Test func theBackgroundServicePurgesWhenItStartsAndStopsWhenCancelled() async throws {
        let auth = try InProcessAuth { $0.sessionPurgeSeconds = 3600 }
        let first = try await auth.register("alice")
        try await auth.logout(first.session.token)
        let service = auth.app.backgroundServices()
        #expect(service.map(\.name) == ["sessions.purge"])
        let task = Task { try await service[0].service.run() }
        try await eventually("the first purge") { try await auth.count("sessions") == 0 }
        task.cancel()
        try await withDeadline("the purge service to stop") { try await task.value }
    }
}
