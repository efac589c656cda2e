import Messages
import Testing

@testable import AuthService

/// `auth.lookup_users` and `auth.change_identity` (AccountHandlers), in process.
struct IdentityChangeTests {
    @Test func lookupByIdAndUsernameCaseInsensitively() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice").identity
        let bob = try await auth.register("bob").identity
        try await auth.register("carol")
        let reply = try await auth.accounts.lookupUsers(
            .init(ids: [alice.id, "unknown"], usernames: ["BOB", "nobody", "alice"]))
        #expect(reply.users == [alice, bob])  // ids first, each identity once, unknown ones left out
        #expect(try await auth.accounts.lookupUsers(.init()).users.isEmpty)
        #expect(try await auth.accounts.lookupUsers(.init(ids: ["nope"], usernames: ["nope"])).users.isEmpty)
        // Upper-case ASCII finds the name; a name that only lower-cases into it finds nobody.
        let kelvin = try await auth.register("kelvin").identity
        #expect(try await auth.accounts.lookupUsers(.init(usernames: ["KELVIN"])).users == [kelvin])
        #expect(try await auth.accounts.lookupUsers(.init(usernames: ["\u{212A}elvin", "\u{212A}ELVIN"])).users.isEmpty)
    }

    @Test func lookupAnswersAtMostAThousandOfEach() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice").identity
        let padding = (0..<1_000).map { "missing-\($0)" }
        #expect(try await auth.accounts.lookupUsers(.init(ids: padding + [alice.id])).users.isEmpty)
        #expect(try await auth.accounts.lookupUsers(.init(ids: [alice.id] + padding)).users == [alice])
    }

    @Test func changingUsernameAndEmailBumpsTheVersionAndEmitsAnEvent() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice")
        let id = alice.identity.id
        let renamed = try await auth.changeIdentity(id, username: "Alice.New")
        #expect(renamed == Identity(id: id, username: "alice.new", email: "alice@example.com", version: 2))
        #expect(try await auth.validate(alice.session.token).username == "alice.new")
        try await auth.login("alice.new")
        await expectError("invalid_credentials", status: 401) { try await auth.login("alice") }

        let moved = try await auth.changeIdentity(id, email: " New@Example.com")
        #expect(moved == Identity(id: id, username: "alice.new", email: "new@example.com", version: 3))
        try await auth.login("NEW@example.com")

        #expect(try await auth.events(Auth.IdentityChanged.self).map(\.identity) == [renamed, moved])
        #expect(
            try await auth.outbox().map(\.type) == [
                Auth.UserRegistered.type, Auth.IdentityChanged.type, Auth.IdentityChanged.type,
            ])
        #expect(try await auth.accounts.lookupUsers(.init(ids: [id])).users == [moved])
    }

    @Test func anUnchangedIdentityKeepsItsVersionAndEmitsNothing() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice").identity
        #expect(try await auth.changeIdentity(alice.id) == alice)
        #expect(try await auth.changeIdentity(alice.id, username: "ALICE", email: "Alice@Example.com ") == alice)
        #expect(try await auth.outbox().map(\.type) == [Auth.UserRegistered.type])
    }

    @Test func changesAreValidatedAndUnique() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice").identity
        try await auth.register("bob")
        let taken = await expectError("username_taken", status: 409) {
            _ = try await auth.changeIdentity(alice.id, username: "BOB")
        }
        #expect(taken?.fields?.map(\.field) == ["username"])
        await expectError("email_taken", status: 409) {
            _ = try await auth.changeIdentity(alice.id, email: "Bob@Example.com")
        }
        let invalid = await expectError("validation_failed", status: 400) {
            _ = try await auth.changeIdentity(alice.id, username: "x", email: "nope")
        }
        #expect(invalid?.fields?.map(\.code) == ["invalid_username", "invalid_email"])
        await expectError("invalid_username", status: 400) {
            _ = try await auth.changeIdentity(alice.id, username: "\u{212A}elvin")
        }
        await expectError("invalid_email", status: 400) {
            _ = try await auth.changeIdentity(alice.id, email: "alice\u{0}@example.com")
        }
        await expectError("not_found", status: 404) { _ = try await auth.changeIdentity("missing", username: "carol") }
        #expect(try await auth.accounts.lookupUsers(.init(ids: [alice.id])).users == [alice])
        #expect(try await auth.events(Auth.IdentityChanged.self).isEmpty)
    }

    /// A freed username can be taken by someone else (the rename rule replicas follow).
    @Test func aUsernameGivenUpCanBeTakenByAnother() async throws {
        let auth = try InProcessAuth()
        let alice = try await auth.register("alice").identity
        let bob = try await auth.register("bob").identity
        _ = try await auth.changeIdentity(alice.id, username: "alice2")
        let bobAsAlice = try await auth.changeIdentity(bob.id, username: "alice")
        #expect(bobAsAlice == Identity(id: bob.id, username: "alice", email: bob.email, version: 2))
        #expect(try await auth.login("alice").identity.id == bob.id)
    }
}
