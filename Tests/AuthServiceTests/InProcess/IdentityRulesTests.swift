import Testing

@testable import AuthService

/// The identity field rules (issue 11 point 5): usernames only from the input alphabet,
/// emails without control characters, passwords without NUL.
struct IdentityRulesTests {
    @Test func usernamesAreAcceptedOnlyWhenTheInputItselfIsInTheAlphabet() {
        // U+212A KELVIN SIGN lower-cases to "k": "\u{212A}elvin".lowercased() == "kelvin".
        #expect("\u{212A}elvin".lowercased() == "kelvin")
        let kelvin = IdentityRules.username("\u{212A}elvin")
        #expect(kelvin.error?.field == "username")
        #expect(kelvin.error?.code == "invalid_username")
        for raw in [
            "ab", "a234567890123456789012345678901", "al-ice", "ålice", "a b", "bob@x", "", "alice\u{0}",
            "\u{FF41}lice",  // FULLWIDTH LATIN SMALL LETTER A
            "\u{0130}stanbul",  // LATIN CAPITAL LETTER I WITH DOT ABOVE
            "ali\u{301}ce", "alice\n", " alice",
        ] {
            let result = IdentityRules.username(raw)
            #expect(result.error?.code == "invalid_username", "\(raw.debugDescription)")
            #expect(result.error?.field == "username", "\(raw.debugDescription)")
        }
    }

    @Test func validUsernamesAreStoredLowerCased() {
        for (raw, stored) in [
            ("Alice", "alice"), ("abc", "abc"), ("a23456789012345678901234567890", "a23456789012345678901234567890"),
            ("Mixed.Case_9", "mixed.case_9"), ("KELVIN", "kelvin"),
        ] {
            let result = IdentityRules.username(raw)
            #expect(result.error == nil, "\(raw)")
            #expect(result.value == stored)
        }
    }

    @Test func emailsAreTrimmedAndLowerCased() {
        let result = IdentityRules.email("  Alice@Example.COM ")
        #expect(result.error == nil)
        #expect(result.value == "alice@example.com")
        // 254 bytes is the limit and is accepted.
        #expect(IdentityRules.email(String(repeating: "a", count: 242) + "@example.com").error == nil)
    }

    @Test func invalidEmailsAreRefused() {
        let tooLong = String(repeating: "a", count: 243) + "@example.com"  // 255 bytes
        for raw in ["a@b", "a@@b.com", "@b.com", "a b@c.com", "a@b..com", "a@.com", "a@b.", "", "   ", tooLong] {
            let result = IdentityRules.email(raw)
            #expect(result.error?.code == "invalid_email", "\(raw.debugDescription)")
            #expect(result.error?.field == "email", "\(raw.debugDescription)")
        }
        #expect(IdentityRules.email(tooLong).error?.message == "at most 254 characters")
    }

    @Test func controlCharactersInEmailsAreRefused() {
        for raw in [
            "ali\u{0}ce@example.com", "\u{0}alice@example.com", "alice@example.com\u{0}", "alice@exa\u{7}mple.com",
            "alice\u{1B}[31m@example.com", "alice\u{7F}@example.com", "alice@example.com\u{80}",
            "alice\u{9F}@example.com", "ali\u{85}ce@example.com", "alice@\u{9}example.com", "ali\nce@example.com",
        ] {
            let result = IdentityRules.email(raw)
            #expect(result.error?.code == "invalid_email", "\(raw.debugDescription)")
            #expect(result.error?.field == "email", "\(raw.debugDescription)")
        }
    }

    @Test func passwordRules() {
        #expect(IdentityRules.password("12345678") == nil)
        #expect(IdentityRules.password(String(repeating: "é", count: 512)) == nil)  // exactly 1,024 bytes
        #expect(IdentityRules.password("1234567")?.code == "weak_password")
        let tooLong = IdentityRules.password(String(repeating: "p", count: 1025))
        #expect(tooLong?.code == "password_too_long")
        #expect(tooLong?.field == "password")
        #expect(IdentityRules.password(String(repeating: "é", count: 512) + "x")?.code == "password_too_long")
    }

    @Test func passwordsWithNULAreRefusedAsInvalidField() {
        for raw in ["correct\u{0}horse", "\u{0}correct horse", "correct horse\u{0}", "\u{0}"] {
            let error = IdentityRules.password(raw)
            #expect(error?.code == "invalid_field", "\(raw.debugDescription)")
            #expect(error?.field == "password", "\(raw.debugDescription)")
            #expect(error?.message.contains("NUL") == true)
        }
        // Other control characters are the user's own business in a password.
        #expect(IdentityRules.password("tab\there and\u{7} bell") == nil)
    }
}
