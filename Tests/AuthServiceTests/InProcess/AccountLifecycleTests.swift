import Foundation
import Messages
import Storage
import Testing
import Wire

@testable import AuthService

/// Password change, deletion and suspension in AuthService (API.md "Account lifecycle and
/// moderation"), called in process on both engines (`TEST_STORAGE_ENGINE`).
@Suite struct AccountLifecycleTests {
    static func error(_ body: () async throws -> Void) async -> ServiceError? {
        do {
            try await body()
            Issue.record("expected a ServiceError")
        } catch let e as ServiceError { return e } catch { Issue.record("unexpected \(error)") }
        return nil
    }

    @Test func changingThePasswordChecksTheCurrentOneAndEndsEveryOtherSession() async throws {
        let auth = try InProcessAuth()
        let first = try await auth.register("alice")
        let second = try await auth.login("alice")
        let third = try await auth.login("alice")
        let lifecycle = auth.app.lifecycle
        let context = InProcessAuth.context()
        let wrong = await Self.error {
            _ = try await lifecycle.changePassword(
                .init(
                    userId: first.identity.id, sessionId: second.session.sessionId, currentPassword: "not it",
                    newPassword: "a new password"), context)
        }
        #expect(wrong?.status == 403 && wrong?.code == "invalid_credentials")
        let weak = await Self.error {
            _ = try await lifecycle.changePassword(
                .init(
                    userId: first.identity.id, sessionId: second.session.sessionId,
                    currentPassword: InProcessAuth.password, newPassword: "short"), context)
        }
        #expect(weak?.status == 400 && weak?.fields?.first?.field == "newPassword" && weak?.code == "weak_password")
        let reply = try await lifecycle.changePassword(
            .init(
                userId: first.identity.id, sessionId: second.session.sessionId, currentPassword: InProcessAuth.password,
                newPassword: "a new password"), context)
        #expect(Set(reply.revokedSessionIds) == [first.session.sessionId, third.session.sessionId])
        #expect(try await auth.validate(second.session.token).sessionId == second.session.sessionId)
        for gone in [first, third] {
            #expect(await Self.error { _ = try await auth.validate(gone.session.token) }?.status == 401)
        }
        #expect(await Self.error { try await auth.login("alice") }?.status == 401)
        _ = try await auth.login("alice", "a new password")
        let revoked = try await auth.events(Auth.SessionRevoked.self).last
        #expect(Set(revoked?.sessionIds ?? []) == [first.session.sessionId, third.session.sessionId])
    }

    @Test func deletingEndsSessionsAndLoginAndKeepsTheNameTakenUntilDone() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice")
        let other = try await auth.login("alice")
        let bob = try await auth.register("bob")
        let lifecycle = auth.app.lifecycle
        let context = InProcessAuth.context()
        let wrong = await Self.error {
            _ = try await lifecycle.deleteAccount(.init(userId: alice.identity.id, password: "nope"), context)
        }
        #expect(wrong?.status == 403 && wrong?.code == "invalid_credentials")
        let reply = try await lifecycle.deleteAccount(
            .init(userId: alice.identity.id, password: InProcessAuth.password), context)
        #expect(reply.status == .deleting && reply.version == 1)
        #expect(Set(reply.revokedSessionIds) == [alice.session.sessionId, other.session.sessionId])
        // A repeat answers the same deletion.
        let again = try await lifecycle.deleteAccount(
            .init(userId: alice.identity.id, password: InProcessAuth.password), context)
        #expect(again.version == reply.version && again.startedAt == reply.startedAt && again.revokedSessionIds.isEmpty)
        #expect(await Self.error { _ = try await auth.validate(other.session.token) }?.status == 401)
        #expect(await Self.error { try await auth.login("alice") }?.code == "invalid_credentials")
        // Lookups no longer find it; the name and email stay taken until the erasure is done.
        #expect(try await auth.accounts.lookupUsers(.init(ids: [alice.identity.id], usernames: ["alice"])).users.isEmpty)
        #expect(await Self.error { try await auth.register("alice", email: "new@example.com") }?.code == "username_taken")
        #expect(await Self.error { try await auth.register("alice2", email: "alice@example.com") }?.code == "email_taken")
        let states = try await auth.events(Auth.AccountStateChanged.self)
        #expect(states.map(\.state) == [.deleting] && states.map(\.userId) == [alice.identity.id])

        // The saga's last step, applied as the subscriber applies NotificationService's event.
        let took = try await auth.database.write { tx in
            try SQLAccountLifecycleStore.finishDeletion(userId: alice.identity.id, now: auth.clock.now, in: tx)
        }
        #expect(took != nil)
        let deleted = try await auth.events(Auth.AccountDeleted.self)
        #expect(deleted.map(\.userId) == [alice.identity.id])
        let rows = try await auth.database.read { c in
            try c.scalar("SELECT count(*) FROM users WHERE id = \(alice.identity.id)")!
                + (try c.scalar("SELECT count(*) FROM sessions WHERE user_id = \(alice.identity.id)")!)
        }
        #expect(rows == 0)
        // The outbox (kept for replay) holds nothing of alice but the lifecycle's ids and times:
        // her registration is redacted, bob's stays.
        let outbox = try await auth.database.read { c in
            try c.query("SELECT type, body FROM outbox ORDER BY seq").map { (try $0.string("type"), try $0.string("body")) }
        }
        let naming = outbox.filter { $0.1.contains(alice.identity.id) }.map(\.0)
        #expect(Set(naming) == [Auth.AccountStateChanged.type, Auth.AccountDeleted.type], "\(naming)")
        #expect(!outbox.contains { $0.1.contains("alice@example.com") })
        #expect(outbox.contains { $0.0 == Outbox.redactedType && $0.1 == "{}" })
        #expect(outbox.contains { $0.0 == Auth.UserRegistered.type && $0.1.contains(bob.identity.id) })
        // Replayed, it does nothing more; the name and email are free.
        let replayed = try await auth.database.write { tx in
            try SQLAccountLifecycleStore.finishDeletion(userId: alice.identity.id, now: auth.clock.now, in: tx)
        }
        let deletedEvents = try await auth.events(Auth.AccountDeleted.self)
        #expect(replayed == nil && deletedEvents.count == 1)
        let reborn = try await auth.register("alice")
        #expect(reborn.identity.id != alice.identity.id)
        _ = try await auth.validate(bob.session.token)
        #expect(
            await Self.error {
                _ = try await lifecycle.deleteAccount(
                    .init(userId: alice.identity.id, password: InProcessAuth.password), context)
            }?.status == 404)
    }

    @Test func aSuspensionEndsSessionsRefusesLoginWith403AndLiftsCleanly() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice")
        let moderator = try await auth.register("mod")
        let lifecycle = auth.app.lifecycle
        let context = InProcessAuth.context()
        let suspended = try await lifecycle.setSuspension(
            .init(userId: alice.identity.id, suspended: true, moderatorId: moderator.identity.id), context)
        #expect(suspended.state == .suspended && suspended.revokedSessionIds == [alice.session.sessionId])
        #expect(await Self.error { _ = try await auth.validate(alice.session.token) }?.status == 401)
        let refused = await Self.error { try await auth.login("alice") }
        #expect(refused?.status == 403 && refused?.code == "account_suspended")
        // A wrong password learns nothing of the suspension.
        #expect(await Self.error { try await auth.login("alice", "wrong one") }?.status == 401)
        // Idempotent; a suspended account cannot be deleted (it has no session to ask with).
        let again = try await lifecycle.setSuspension(
            .init(userId: alice.identity.id, suspended: true, moderatorId: moderator.identity.id), context)
        #expect(again.version == suspended.version)
        let lifted = try await lifecycle.setSuspension(
            .init(userId: alice.identity.id, suspended: false, moderatorId: moderator.identity.id), context)
        #expect(lifted.state == .active && lifted.version == suspended.version + 1)
        _ = try await auth.login("alice")
        let states = try await auth.events(Auth.AccountStateChanged.self)
        #expect(states.map(\.state) == [.suspended, .active])
        #expect(states.map(\.moderatorId) == [moderator.identity.id, moderator.identity.id])
        #expect(
            try await lifecycle.lifecycle.states(userIds: [alice.identity.id, "nobody"]).mapValues(\.state) == [
                alice.identity.id: .active
            ])
    }
}
