import Messages
import Testing
import Wire

@testable import AuthService

/// `auth.register` and `auth.check_fields` (AccountHandlers), in process: normalisation,
/// every field error at once, uniqueness, the event written with the account.
struct RegistrationTests {
    @Test func registerReturnsTheIdentityAWorkingSessionAndAnEvent() async throws {
        let auth = try InProcessAuth()
        let reply = try await auth.register("Alice.Smith_1", email: "  Alice@Example.COM ")
        #expect(reply.identity.username == "alice.smith_1")
        #expect(reply.identity.email == "alice@example.com")
        #expect(reply.identity.version == 1)
        #expect(reply.session.token.count == 43)  // 256 bits, base64url without padding
        #expect(reply.session.expiresAt == Timestamp.format(ms: auth.clock.now + 30 * 24 * 3600 * 1000))
        let session = try await auth.validate(reply.session.token)
        #expect(session.userId == reply.identity.id)
        #expect(session.sessionId == reply.session.sessionId)
        #expect(session.username == "alice.smith_1")
        #expect(session.expiresAt == reply.session.expiresAt)
        #expect(try await auth.events(Auth.UserRegistered.self).map(\.identity) == [reply.identity])
        #expect(try await auth.outbox().map(\.type) == [Auth.UserRegistered.type])
    }

    @Test func everyInvalidFieldIsReportedAtOnceAndNothingIsStored() async throws {
        let auth = try InProcessAuth()
        let error = await expectError("validation_failed", status: 400) {
            try await auth.register("A!", email: "not-an-email", password: "short")
        }
        #expect(error?.fields?.map(\.field) == ["email", "username", "password"])
        #expect(error?.fields?.map(\.code) == ["invalid_email", "invalid_username", "weak_password"])
        #expect(try await auth.count("users") == 0)
        #expect(try await auth.count("sessions") == 0)
        #expect(try await auth.outbox().isEmpty)
    }

    @Test func aUsernameThatOnlyFoldsIntoTheAlphabetIsRefused() async throws {
        let auth = try InProcessAuth()
        let error = await expectError("invalid_username", status: 400) {
            try await auth.register("\u{212A}elvin", email: "kelvin@example.com")
        }
        #expect(error?.fields?.map(\.field) == ["username"])
        #expect(try await auth.count("users") == 0)
        // The ASCII spelling is fine, and mixed case is stored lower-cased.
        #expect(try await auth.register("Kelvin").identity.username == "kelvin")
        #expect(try await auth.register("Alice").identity.username == "alice")
        let stored = try await auth.database.read { c in
            try c.query("SELECT username FROM users ORDER BY username").map { try $0.string("username") }
        }
        #expect(stored == ["alice", "kelvin"])
    }

    @Test func aPasswordWithNULIsRefusedNamingThePasswordField() async throws {
        let auth = try InProcessAuth()
        let error = await expectError("invalid_field", status: 400) {
            try await auth.register("alice", password: "correct\u{0}horse")
        }
        #expect(error?.fields?.map(\.field) == ["password"])
        #expect(error?.fields?.map(\.code) == ["invalid_field"])
        #expect(try await auth.count("users") == 0)
    }

    @Test func controlCharactersInTheEmailAreRefused() async throws {
        let auth = try InProcessAuth()
        for email in ["ali\u{0}ce@example.com", "alice@exa\u{1B}mple.com", "alice\u{9B}@example.com"] {
            let error = await expectError("invalid_email", status: 400) {
                try await auth.register("alice", email: email)
            }
            #expect(error?.fields?.map(\.field) == ["email"])
        }
        #expect(try await auth.count("users") == 0)
    }

    @Test func passwordLengthLimits() async throws {
        let auth = try InProcessAuth()
        await expectError("weak_password", status: 400) { try await auth.register("weak", password: "1234567") }
        let error = await expectError("password_too_long", status: 400) {
            try await auth.register("long", password: String(repeating: "p", count: 1025))
        }
        #expect(error?.fields?.map(\.field) == ["password"])
        try await auth.register("eight", password: "12345678")
        try await auth.register("kibi", password: String(repeating: "é", count: 512))  // exactly 1,024 bytes
        try await auth.login("kibi", String(repeating: "é", count: 512))
    }

    @Test func aRepeatOfAnUnfinishedRegistrationFinishesIt() async throws {
        let auth = try InProcessAuth()
        let first = try await auth.register("bob", email: "bob@example.com")
        // The profile was never made (ProfileService died): the same request again is the same
        // account with a new session, and nothing new is stored or emitted.
        let again = try await auth.register("bob", email: "bob@example.com")
        #expect(again.identity == first.identity)
        #expect(again.session.token != first.session.token)
        #expect(try await auth.validate(again.session.token).userId == first.identity.id)
        #expect(try await auth.count("users") == 1)
        #expect(try await auth.outbox().count == 1)
        // Another password, or another username with the same email, is still taken.
        _ = await expectError("email_taken", status: 409) {
            try await auth.register("bob", email: "bob@example.com", password: "another horse")
        }
        _ = await expectError("email_taken", status: 409) { try await auth.register("bobby", email: "bob@example.com") }
        // Once finished, or an hour on, a repeat is 409.
        try await auth.accounts.accounts.completeRegistration(userId: first.identity.id)
        _ = await expectError("email_taken", status: 409) { try await auth.register("bob", email: "bob@example.com") }
        _ = try await auth.register("carol", email: "carol@example.com")
        auth.clock.advance(ms: Auth.Register.resumeWindowMs + 1)
        _ = await expectError("email_taken", status: 409) { try await auth.register("carol", email: "carol@example.com") }
    }

    @Test func usernameAndEmailAreUniqueCaseInsensitively() async throws {
        let auth = try InProcessAuth()
        try await auth.register("alice", email: "alice@example.com")
        let username = await expectError("username_taken", status: 409) {
            try await auth.register("ALICE", email: "other@example.com")
        }
        #expect(username?.fields?.map(\.field) == ["username"])
        let email = await expectError("email_taken", status: 409) {
            try await auth.register("other", email: " ALICE@Example.com")
        }
        #expect(email?.fields?.map(\.field) == ["email"])
        // Its profile made (the gateway says so): a repeat with the same password is no longer
        // a registration to finish.
        let alice = try #require(try await auth.accounts.lookupUsers(.init(ids: [], usernames: ["alice"])).users.first)
        try await auth.accounts.accounts.completeRegistration(userId: alice.id)
        let both = await expectError("email_taken", status: 409) {
            try await auth.register("Alice", email: "alice@EXAMPLE.com")
        }
        #expect(both?.fields?.map(\.code) == ["email_taken", "username_taken"])
        #expect(try await auth.count("users") == 1)
        #expect(try await auth.outbox().count == 1)
    }

    /// Registrations racing for one username: exactly one wins, the others get 409 (the store
    /// checks again inside its transaction, after the hash).
    @Test func concurrentRegistrationsOfOneUsernameLetExactlyOneWin() async throws {
        let auth = try InProcessAuth()
        let outcomes = await withTaskGroup(of: String.self) { group in
            for i in 0..<6 {
                group.addTask {
                    do {
                        try await auth.register("alice", email: "alice\(i)@example.com")
                        return "ok"
                    } catch let error as ServiceError {
                        return error.code
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(outcomes.sorted() == ["ok"] + Array(repeating: "username_taken", count: 5))
        #expect(try await auth.count("users") == 1)
        #expect(try await auth.events(Auth.UserRegistered.self).count == 1)
    }

    @Test func checkFieldsReportsEveryFieldErrorAtOnce() async throws {
        let auth = try InProcessAuth()
        do {
            _ = try auth.accounts.checkFields(
                .init(email: "not-an-email", username: "\u{212A}elvin", password: "pass\u{0}word"))
            Issue.record("expected 400")
        } catch let error as ServiceError {
            #expect(error.status == 400)
            #expect(error.code == "validation_failed")
            #expect(error.fields?.map(\.field) == ["email", "username", "password"])
            #expect(error.fields?.map(\.code) == ["invalid_email", "invalid_username", "invalid_field"])
        }
        do {
            _ = try auth.accounts.checkFields(.init(email: "alice@example.com", username: "al", password: "short"))
            Issue.record("expected 400")
        } catch let error as ServiceError {
            #expect(error.fields?.map(\.code) == ["invalid_username", "weak_password"])
        }
    }

    @Test func checkFieldsChecksOnlyTheGivenFieldsAndNeitherStoresNorChecksUniqueness() async throws {
        let auth = try InProcessAuth()
        try await auth.register("alice")
        #expect(try auth.accounts.checkFields(.init()) == Empty())
        #expect(try auth.accounts.checkFields(.init(username: "Alice")) == Empty())  // taken: 409 is register's
        #expect(
            try auth.accounts.checkFields(.init(email: "alice@example.com", username: "bob", password: "12345678"))
                == Empty())
        do {
            _ = try auth.accounts.checkFields(.init(password: "\u{0}"))
            Issue.record("expected 400")
        } catch let error as ServiceError {
            #expect(error.code == "invalid_field")
            #expect(error.fields?.map(\.field) == ["password"])
        }
        #expect(try await auth.count("users") == 1)
        #expect(try await auth.outbox().count == 1)
    }
}

/// Issue 18: Unicode in identities. Emails are NFC before uniqueness and lookup; format
/// characters, mixed-script domain labels and names of only dots are refused.
struct UnicodeIdentityTests {
    @Test func anEmailTypedNFCOrNFDIsOneAccount() async throws {
        let auth = try InProcessAuth()
        let nfc = "jos\u{E9}@example.com"
        let nfd = "jose\u{301}@example.com"
        #expect(!nfc.unicodeScalars.elementsEqual(nfd.unicodeScalars))
        let first = try await auth.register("jose1", email: nfd)
        #expect(first.identity.email.unicodeScalars.elementsEqual(nfc.unicodeScalars))
        await expectError("email_taken", status: 409) { try await auth.register("jose2", email: nfc) }
        #expect(try await auth.login(nfc).identity.id == first.identity.id)
        #expect(try await auth.login(nfd).identity.id == first.identity.id)
    }

    @Test func formatCharactersHomoglyphDomainsAndDotOnlyNamesAreRefused() {
        for email in [
            "a\u{200B}b@example.com", "ab@exa\u{202E}mple.com", "ab@p\u{430}ypal.com", "ab@\u{FEFF}example.com",
        ] {
            #expect(IdentityRules.email(email).error?.code == "invalid_email", "\(email.debugDescription)")
        }
        for ok in ["ab@\u{43F}\u{440}\u{438}\u{43C}\u{435}\u{440}.com", "jos\u{E9}@caf\u{E9}.fr", "a@b-1.co"] {
            #expect(IdentityRules.email(ok).error == nil, "\(ok.debugDescription)")
        }
        for name in ["...", "._.", "___", "ab\u{200B}c", "ab\u{202E}c"] {
            #expect(IdentityRules.username(name).error?.code == "invalid_username", "\(name.debugDescription)")
        }
        #expect(IdentityRules.username("a.b").error == nil)
    }
}
