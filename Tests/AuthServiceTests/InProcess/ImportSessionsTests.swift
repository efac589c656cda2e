import BackendKit
import Messages
import Testing
import Wire

@testable import AuthService

/// `auth.import_sessions` (ImportHandlers and the session store), in process, on the engine
/// `TEST_STORAGE_ENGINE` names: sessions that validate, expire and log out as a login's; refused
/// unless configured; ids checked and named by index; the batch's limits; nothing written on
/// any error.
@Suite struct ImportSessionsTests {
    /// AuthService with `auth.import_sessions` allowed (or not) and `names` imported.
    static func auth(_ names: [String] = ["alice", "bob"]) async throws
        -> (InProcessAuth, [Auth.ImportUsers.Imported])
    {
        let auth = try InProcessAuth { $0.allowImports = true }
        let users = try await auth.app.imports.importUsers(
            .init(passwordHash: ImportUsersTests.policyHash, users: ImportUsersTests.users(names)),
            InProcessAuth.context(Auth.ImportUsers.type)
        ).users
        return (auth, users)
    }

    func importSessions(_ auth: InProcessAuth, _ ids: [String]) async throws -> [Auth.SessionReply] {
        try await auth.app.imports.importSessions(
            .init(userIds: ids), InProcessAuth.context(Auth.ImportSessions.type)
        ).sessions
    }

    @Test func importedSessionsValidateExpireAndLogOutAsALoginsDo() async throws {
        let (auth, users) = try await Self.auth()
        let (alice, bob) = (users[0], users[1])
        let eventsBefore = try await auth.outbox().count
        let sessions = try await importSessions(auth, [bob.id, alice.id])
        // One login reply per id, in request order.
        #expect(sessions.map(\.identity.id) == [bob.id, alice.id])
        #expect(sessions.map(\.identity.username) == ["bob", "alice"])
        #expect(sessions[0].identity == Identity(id: bob.id, username: "bob", email: "bob@example.com", version: 1))
        #expect(Set(sessions.map(\.session.token)).count == 2)
        let ttlMs = Int64(auth.configuration.sessionTTLSeconds) * 1000
        for s in sessions {
            #expect(s.session.expiresAt == Timestamp.format(ms: auth.clock.now + ttlMs))
            let valid = try await auth.validate(s.session.token)
            #expect(valid.userId == s.identity.id && valid.sessionId == s.session.sessionId)
            #expect(valid.username == s.identity.username)
        }
        #expect(try await auth.count("sessions") == 2)
        #expect(try await auth.outbox().count == eventsBefore)  // as a login: no event
        // Logout revokes it, with the revocation event the gateway listens to.
        let out = try await auth.logout(sessions[0].session.token)
        #expect(out.userId == bob.id && out.revokedSessionIds == [sessions[0].session.sessionId])
        #expect(try await auth.events(Auth.SessionRevoked.self).last?.sessionIds == [sessions[0].session.sessionId])
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(sessions[0].session.token) }
        // "Every session" covers imported and login ones alike.
        let login = try await auth.login("alice")
        let all = try await auth.logout(login.session.token, all: true)
        #expect(Set(all.revokedSessionIds) == [sessions[1].session.sessionId, login.session.sessionId])
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(sessions[1].session.token) }
        // They expire with the session lifetime and the purge deletes them.
        let later = try await importSessions(auth, [alice.id])
        auth.clock.advance(ms: ttlMs)
        await expectError("invalid_token", status: 401) { _ = try await auth.validate(later[0].session.token) }
        _ = try await SQLSessionStore(database: auth.database).purge(now: auth.clock.now, limit: 100)
        #expect(try await auth.count("sessions") == 0)
    }

    @Test func refusedUnlessTheServiceAllowsIt() async throws {
        let (auth, users) = try await Self.auth()
        // The same stores behind a service that does not allow imports.
        let on = auth.app.imports
        let off = ImportHandlers(
            accounts: on.accounts, sessions: on.sessions, imports: Imports(allowed: false), sessionTTLMs: on.sessionTTLMs,
            clock: on.clock)
        let error = await expectError("imports_disabled", status: 403) {
            _ = try await off.importSessions(.init(userIds: [users[0].id]), InProcessAuth.context(Auth.ImportSessions.type))
        }
        #expect(error?.message.contains("ALLOW_IMPORTS=1") == true)
        // Even a bad request is refused as such, before anything about it is said.
        await expectError("imports_disabled", status: 403) {
            _ = try await off.importSessions(.init(userIds: []), InProcessAuth.context(Auth.ImportSessions.type))
        }
        await expectError("imports_disabled", status: 403) {
            _ = try await off.importUsers(
                .init(passwordHash: ImportUsersTests.policyHash, users: ImportUsersTests.users(["carol"])),
                InProcessAuth.context(Auth.ImportUsers.type))
        }
        #expect(try await auth.count("sessions") == 0)
        #expect(try await auth.count("users") == Int64(users.count))
    }

    @Test func badIdsAreNamedByIndexAndNothingIsWritten() async throws {
        let (auth, users) = try await Self.auth()
        let alice = users[0].id
        let error = await expectError("validation_failed", status: 400) {
            _ = try await importSessions(auth, [alice, "not-an-id", alice, alice.uppercased(), String(alice.prefix(31))])
        }
        #expect(
            error?.fields?.map { "\($0.field) \($0.code)" } == [
                "userIds[1] invalid_field", "userIds[2] invalid_field", "userIds[3] invalid_field",
                "userIds[4] invalid_field",
            ])
        // Well-formed ids no account has: named by the store, nothing written for the others.
        let unknown = RandomID.make()
        let one = await expectError("unknown_user", status: 400) {
            _ = try await importSessions(auth, [alice, unknown, users[1].id])
        }
        #expect(one?.fields?.map { "\($0.field) \($0.code)" } == ["userIds[1] unknown_user"])
        let two = await expectError("validation_failed", status: 400) {
            _ = try await importSessions(auth, [RandomID.make(), alice, unknown])
        }
        #expect(two?.fields?.map(\.field) == ["userIds[0]", "userIds[2]"])
        #expect(try await auth.count("sessions") == 0)
    }

    @Test func aBatchIsOneToFiveThousandIds() async throws {
        let max = Auth.ImportSessions.maxUsers
        let (auth, users) = try await Self.auth((0..<max).map { "user_\($0)" })
        for ids in [[], users.map(\.id) + [RandomID.make()]] {
            let error = await expectError("invalid_request", status: 400) { _ = try await importSessions(auth, ids) }
            #expect(error?.fields?.map(\.field) == ["userIds"])
        }
        #expect(try await auth.count("sessions") == 0)
        // A full batch: one transaction, every session valid.
        let sessions = try await importSessions(auth, users.map(\.id))
        #expect(sessions.map(\.identity.id) == users.map(\.id))
        #expect(Set(sessions.map(\.session.token)).count == max)
        #expect(try await auth.count("sessions") == Int64(max))
        #expect(try await auth.validate(sessions[max - 1].session.token).userId == users[max - 1].id)
    }
}
