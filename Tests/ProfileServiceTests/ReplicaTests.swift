import Foundation
import Shared
import TestSupport
import Testing

/// The identity replica: kept from AuthService's events (also across a ProfileService restart),
/// with `auth.lookup_users` as the fallback when an event has not arrived yet.
@Suite struct ReplicaTests {
    /// Polls `GetMe` (a replica hit, so never the lookup fallback) until `done` holds, for up to 10 s.
    func eventually(_ h: ProfileHarness, _ userId: String, _ done: (Me) -> Bool) async throws -> Me {
        let deadline = Timestamp.nowMs() + 10_000
        while true {
            let me = try await h.profile.call(Profile.GetMe.self, .init(userId: userId))
            if done(me) || Timestamp.nowMs() > deadline { return me }
        }
    }

    @Test func identityChangesArriveAsEvents() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        _ = try await h.auth.call(Auth.ChangeIdentity.self, .init(userId: a.id, username: "alice2", email: nil))
        let me = try await eventually(h, a.id) { $0.username == "alice2" }
        #expect(me.username == "alice2" && me.email == "alice@example.com")
    }

    @Test func eventsMissedWhileDownAreReplayedAfterRestart() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice", name: "Alice")
        h.cluster.stop("profile")
        _ = try await h.auth.call(
            Auth.ChangeIdentity.self, .init(userId: a.id, username: "alice.renamed", email: "a2@example.com"))
        // The freed name goes to a new account while ProfileService is down.
        let bob = try await h.auth.call(
            Auth.Register.self, .init(email: "bob@example.com", username: "alice", password: "password-123"), timeoutMs: 10_000)
        try await h.cluster.start("profile")
        try await waitUntilReachable(h.profile)
        let me = try await eventually(h, a.id) { $0.username == "alice.renamed" }
        #expect(me.username == "alice.renamed" && me.email == "a2@example.com" && me.name == "Alice")
        // Once the rename is applied, "alice" means bob (found by the lookup fallback if his
        // registration event is not applied yet).
        #expect(try await h.profile.call(Profile.Header.self, .init(username: "alice")).user.id == bob.identity.id)
        #expect(try await h.profile.call(Profile.Header.self, .init(username: "alice.renamed")).user.id == a.id)
    }
}
