import Shared
import TestSupport
import Testing

/// Registration over ZeroMQ against the real AuthService: normalisation, validation with
/// field-level errors, uniqueness.
@Suite struct RegistrationTests {
    @Test func registerReturnsIdentityAndAWorkingSession() async throws {
        let auth = try await AuthFixture.start()
        let reply = try await auth.register("Alice.Smith_1", email: "  Alice@Example.COM ")
        #expect(reply.identity.username == "alice.smith_1")
        #expect(reply.identity.email == "alice@example.com")
        #expect(reply.identity.version == 1)
        #expect(reply.session.token.count == 43)  // 256 bits, base64url without padding
        let session = try await auth.validate(reply.session.token)
        #expect(session.userId == reply.identity.id)
        #expect(session.sessionId == reply.session.sessionId)
        #expect(session.username == "alice.smith_1")
        #expect(session.expiresAt == reply.session.expiresAt)
    }

    @Test func invalidFieldsAreReportedTogether() async throws {
        let auth = try await AuthFixture.start()
        let error = await expectError("validation_failed", status: 400) {
            try await auth.register("A!", email: "not-an-email", password: "short")
        }
        #expect(error?.fields?.map(\.field) == ["email", "username", "password"])
        #expect(error?.fields?.map(\.code) == ["invalid_email", "invalid_username", "weak_password"])
    }

    @Test func invalidUsernames() async throws {
        let auth = try await AuthFixture.start()
        for username in [
            "ab", "a234567890123456789012345678901", "al-ice", "ålice", "a b", "bob@x", "",
        ] {
            let error = await expectError("invalid_username", status: 400) {
                try await auth.register(username, email: "someone@example.com")
            }
            #expect(error?.fields?.first?.field == "username", "\(username)")
        }
    }

    @Test func usernameLengthBoundsAccepted() async throws {
        let auth = try await AuthFixture.start()
        try await auth.register("abc")
        try await auth.register("a23456789012345678901234567890")
        try await auth.register("Mixed.Case_9")
    }

    @Test func invalidEmails() async throws {
        let auth = try await AuthFixture.start()
        let tooLong = String(repeating: "a", count: 243) + "@example.com"  // 255 bytes
        for email in [
            "a@b", "a@@b.com", "@b.com", "a b@c.com", "a@b..com", "a@.com", "a@b.", "", tooLong,
        ] {
            let error = await expectError("invalid_email", status: 400) {
                try await auth.register("someone", email: email)
            }
            #expect(error?.fields?.first?.field == "email", "\(email)")
        }
        // 254 bytes is the limit and is accepted.
        try await auth.register("longmail", email: String(repeating: "a", count: 242) + "@example.com")
    }

    @Test func passwordRules() async throws {
        let auth = try await AuthFixture.start()
        await expectError("weak_password", status: 400) {
            try await auth.register("weak", password: "1234567")
        }
        let tooLong = String(repeating: "p", count: 1025)
        let error = await expectError("password_too_long", status: 400) {
            try await auth.register("long", password: tooLong)
        }
        #expect(error?.fields?.first?.field == "password")
        await expectError("password_too_long", status: 400) {
            _ = try await auth.login("long", tooLong)
        }
        try await auth.register("eight", password: "12345678")
        try await auth.register("kibi", password: String(repeating: "é", count: 512))  // exactly 1024 bytes
        _ = try await auth.login("kibi", String(repeating: "é", count: 512))
    }

    @Test func usernameAndEmailAreUniqueCaseInsensitively() async throws {
        let auth = try await AuthFixture.start()
        try await auth.register("alice", email: "alice@example.com")
        await expectError("username_taken", status: 409) {
            try await auth.register("ALICE", email: "other@example.com")
        }
        await expectError("email_taken", status: 409) {
            try await auth.register("other", email: "ALICE@Example.com")
        }
        let both = await expectError("email_taken", status: 409) {
            try await auth.register("Alice", email: "alice@EXAMPLE.com")
        }
        #expect(both?.fields?.map(\.code) == ["email_taken", "username_taken"])
    }
}
