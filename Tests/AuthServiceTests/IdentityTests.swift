import Shared
import TestSupport
import Testing

/// Identity reads and changes: lookups, versioned username/email changes, uniqueness.
@Suite struct IdentityTests {
    @Test func lookupByIdAndUsername() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice").identity
        let bob = try await auth.register("bob").identity
        let reply = try await auth.client.call(
            Auth.LookupUsers.self,
            .init(ids: [alice.id, "unknown"], usernames: ["BOB", "nobody", "alice"]))
        #expect(reply.users == [alice, bob])
        let none = try await auth.client.call(Auth.LookupUsers.self, .init())
        #expect(none.users.isEmpty)
    }

    @Test func changeUsernameAndEmail() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        let id = alice.identity.id
        let renamed = try await auth.client.call(
            Auth.ChangeIdentity.self, .init(userId: id, username: "Alice.New", email: nil))
        #expect(
            renamed == Identity(id: id, username: "alice.new", email: "alice@example.com", version: 2))
        #expect(try await auth.validate(alice.session.token).username == "alice.new")
        _ = try await auth.login("alice.new")
        await expectError("invalid_credentials", status: 401) { _ = try await auth.login("alice") }

        let moved = try await auth.client.call(
            Auth.ChangeIdentity.self, .init(userId: id, username: nil, email: " New@Example.com"))
        #expect(moved.email == "new@example.com")
        #expect(moved.version == 3)
        _ = try await auth.login("NEW@example.com")

        // Unchanged values: no new version.
        let same = try await auth.client.call(
            Auth.ChangeIdentity.self, .init(userId: id, username: "alice.new", email: "new@example.com"))
        #expect(same.version == 3)
        let looked = try await auth.client.call(Auth.LookupUsers.self, .init(ids: [id]))
        #expect(looked.users == [moved])
    }

    @Test func changesAreValidatedAndUnique() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice").identity
        try await auth.register("bob")
        await expectError("username_taken", status: 409) {
            _ = try await auth.client.call(
                Auth.ChangeIdentity.self, .init(userId: alice.id, username: "BOB", email: nil))
        }
        await expectError("email_taken", status: 409) {
            _ = try await auth.client.call(
                Auth.ChangeIdentity.self, .init(userId: alice.id, username: nil, email: "Bob@Example.com"))
        }
        let invalid = await expectError("validation_failed", status: 400) {
            _ = try await auth.client.call(
                Auth.ChangeIdentity.self, .init(userId: alice.id, username: "x", email: "nope"))
        }
        #expect(invalid?.fields?.map(\.code) == ["invalid_username", "invalid_email"])
        await expectError("not_found", status: 404) {
            _ = try await auth.client.call(
                Auth.ChangeIdentity.self, .init(userId: "missing", username: "carol", email: nil))
        }
        let unchanged = try await auth.client.call(Auth.LookupUsers.self, .init(ids: [alice.id]))
        #expect(unchanged.users == [alice])
    }
}
