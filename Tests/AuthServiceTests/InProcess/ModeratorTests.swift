import Foundation
import Harness
import Messages
import Support
import Testing

@testable import AuthService

/// The moderator role (API.md "Account lifecycle and moderation", "Moderators"): the operator's
/// `AuthService moderator grant|revoke|list`, on AuthService's own database (either engine); the
/// role holds from the next login, `auth.validate` answers it, and a revoke takes it from live
/// sessions at once.
@Suite struct ModeratorTests {
    /// The command as the operator runs it, with AuthService's configuration.
    func command(_ a: InProcessAuth, _ arguments: String...) async throws -> Int32? {
        await ModeratorCommand.run(
            ["AuthService"] + arguments,
            env: Environment(["DATA_DIR": a.directory, "AUTH_DATABASE_URL": try TestStorage.url(a.directory, "auth")]))
    }

    @Test func theRoleHoldsFromTheNextLoginAndARevokeTakesItAtOnce() async throws {
        let a = try InProcessAuth()
        let before = try await a.register("alice")
        _ = try await a.register("bob")
        #expect(try await command(a, "moderator", "grant", "Alice") == 0)
        #expect(try await command(a, "moderator", "grant", "alice") == 0)  // again: nothing changes
        // The session made before the grant has no role; the next login's has.
        #expect(try await !a.validate(before.session.token).moderator)
        let after = try await a.login("alice")
        #expect(try await a.validate(after.session.token).moderator)
        #expect(try await !a.validate(try await a.login("bob").session.token).moderator)
        let store = SQLModeratorStore(database: a.database)
        #expect(try await store.moderators().map(\.identity.username) == ["alice"])
        // A revoke: no more role, in the live session either.
        let second = try await a.login("alice")
        #expect(try await command(a, "moderator", "revoke", "alice") == 0)
        for token in [after.session.token, second.session.token] { #expect(try await !a.validate(token).moderator) }
        #expect(try await !a.validate(try await a.login("alice").session.token).moderator)
        #expect(try await store.moderators().isEmpty)
        #expect(try await store.revoke(username: "alice")?.sessions == 0)
    }

    @Test func theCommandSaysWhatIsWrong() async throws {
        let a = try InProcessAuth()
        _ = try await a.register("alice")
        #expect(try await command(a, "moderator", "grant", "nobody") == 1)
        #expect(try await command(a, "moderator", "revoke", "nobody") == 1)
        #expect(try await command(a, "moderator", "grant") == 2)
        #expect(try await command(a, "moderator", "promote", "alice") == 2)
        #expect(try await command(a, "moderator", "list", "extra") == 2)
        #expect(try await command(a, "moderator", "list") == 0)
        #expect(try await command(a, "keygen", "/tmp", "x") == nil)  // not this command's
        // A database it cannot open: 1, nothing else.
        let broken = await ModeratorCommand.run(
            ["AuthService", "moderator", "list"], env: Environment(["AUTH_DATABASE_URL": "mysql://nowhere"]))
        #expect(broken == 1)
    }
}
