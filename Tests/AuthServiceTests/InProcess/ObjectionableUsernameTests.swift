import Foundation
import Harness
import Messages
import Support
import Testing

@testable import AuthService

/// The operator's word list (`MODERATION_WORDS_FILE`, `WordList`) in AuthService: a username
/// holding a listed term is refused with 422 `objectionable_content` naming `username` at
/// registration, on a rename and by the field check, after the format rules (400 first), and
/// nothing is stored; the list's file is read at start (unset: nothing refused; unreadable: a
/// configuration error naming the variable). On the store's engine (`TEST_STORAGE_ENGINE`).
struct ObjectionableUsernameTests {
    static func auth() throws -> InProcessAuth {
        let words = try WordList(lines: ["badword", "bad guy"])
        return try InProcessAuth { $0.words = words }
    }

    @Test func registrationRefusesAUsernameWithAListedTermAndStoresNothing() async throws {
        let auth = try Self.auth()
        for name in ["badword", "BadWord_99", "the.badword", "b.a.d.w.o.r.d", "bad_guy"] {
            let error = await expectError("objectionable_content", status: 422) { try await auth.register(name) }
            #expect(error?.fields == [WordList.objectionable("username")], "\(name)")
        }
        #expect(try await auth.count("users") == 0)
        #expect(try await auth.outbox().isEmpty)
        // Whole parts only: a name that merely contains the term is fine.
        for name in ["badwordsmith", "goodword", "badguys"] { try await auth.register(name) }
        // The format rules come first: a name that breaks them is 400, whatever it holds.
        let error = await expectError("invalid_email", status: 400) {
            _ = try await auth.accounts.register(
                .init(email: "not-an-email", username: "badword", password: InProcessAuth.password),
                InProcessAuth.context())
        }
        #expect(error?.fields?.map(\.field) == ["email"])
    }

    @Test func aRenameAndTheFieldCheckRefuseItToo() async throws {
        let auth = try Self.auth()
        let alice = try await auth.register("alice").identity
        await expectError("objectionable_content", status: 422) {
            _ = try await auth.changeIdentity(alice.id, username: "Bad.Guy")
        }
        #expect(try await auth.accounts.lookupUsers(.init(ids: [alice.id])).users == [alice])
        #expect(try await auth.events(Auth.IdentityChanged.self).isEmpty)
        // An email change alone is not judged by the list.
        _ = try await auth.changeIdentity(alice.id, email: "badword@example.com")

        let check = await expectError("objectionable_content", status: 422) {
            _ = try auth.accounts.checkFields(.init(email: "x@example.com", username: "badword99", password: "long enough"))
        }
        #expect(check?.fields?.map(\.field) == ["username"])
        await expectError("weak_password", status: 400) {
            _ = try auth.accounts.checkFields(.init(email: "x@example.com", username: "badword", password: "short"))
        }
        _ = try auth.accounts.checkFields(.init(email: "x@example.com", username: "fine.name", password: "long enough"))
    }

    @Test func withoutAListNothingIsRefused() async throws {
        let auth = try InProcessAuth()
        try await auth.register("badword")
    }

    @Test func theListIsReadFromTheVariableAndAnUnreadableFileStopsTheStart() throws {
        #expect(try AuthConfiguration(env: Environment([:])).words.isEmpty)
        let directory = makeTemporaryDirectory("auth-words")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/words.txt"
        try Data("# list\nbadword\n".utf8).write(to: URL(fileURLWithPath: path))
        let configuration = try AuthConfiguration(env: Environment([WordList.variable: path]))
        #expect(configuration.words.count == 1)
        for value in ["\(directory)/missing.txt", directory] {
            do {
                _ = try AuthConfiguration(env: Environment([WordList.variable: value]))
                Issue.record("\(value) accepted")
            } catch let error as ConfigurationError {
                #expect(error.variable == "MODERATION_WORDS_FILE" && error.value == value)
            }
        }
    }
}
