import CSodium
import Messages
import Testing

@testable import AuthService

/// `auth.import_users` (ImportHandlers and the account store), in process: validation naming
/// the entry, the password-hash policy, an interrupted import sent again, conflicts that write
/// nothing, one event per batch, and imported users logging in with the shared password.
@Suite struct ImportUsersTests {
    init() { _ = sodium_init() }

    /// libsodium's argon2id PHC string of `password` with `passes` and `memoryKiB` (the policy's
    /// by default).
    static func phc(_ password: String = InProcessAuth.password, passes: UInt64 = 2, memoryKiB: Int = 19_456) -> String {
        var out = [CChar](repeating: 0, count: crypto_pwhash_strbytes())
        let rc = crypto_pwhash_str_alg(
            &out, password, UInt64(password.utf8.count), passes, memoryKiB * 1024, crypto_pwhash_alg_argon2id13())
        precondition(rc == 0, "argon2id failed")
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// One hash at the policy, computed once for the suite.
    static let policyHash = phc()

    static func users(_ names: [String]) -> [Auth.ImportUsers.User] {
        names.map { .init(username: $0, email: "\($0.lowercased())@example.com") }
    }

    func importUsers(_ auth: InProcessAuth, _ users: [Auth.ImportUsers.User], hash: String = policyHash)
        async throws -> [Auth.ImportUsers.Imported]
    {
        try await auth.app.imports.importUsers(
            .init(passwordHash: hash, users: users), InProcessAuth.context(Auth.ImportUsers.type)
        ).users
    }

    @Test func importedUsersAreCreatedInOrderWithOneEventAndLogInWithTheSharedPassword() async throws {
        let auth = try InProcessAuth { $0.allowImports = true }
        let reply = try await importUsers(
            auth, [.init(username: "Alice", email: " Alice@Example.com"), .init(username: "bob", email: "bob@example.com")])
        #expect(reply.map(\.username) == ["alice", "bob"])
        #expect(reply.allSatisfy { $0.created && $0.id.count == 32 })
        let events = try await auth.events(Auth.UsersImported.self)
        #expect(events.count == 1)
        #expect(
            events.first?.identities == [
                Identity(id: reply[0].id, username: "alice", email: "alice@example.com", version: 1),
                Identity(id: reply[1].id, username: "bob", email: "bob@example.com", version: 1),
            ])
        #expect(try await auth.outbox().map(\.type) == [Auth.UsersImported.type])
        #expect(try await auth.count("users") == 2)
        #expect(try await auth.count("sessions") == 0)  // an import logs nobody in
        let session = try await auth.login("alice")
        #expect(session.identity.id == reply[0].id)
        #expect(try await auth.validate(session.session.token).userId == reply[0].id)
        let wrong = await expectError("invalid_credentials", status: 401) { try await auth.login("bob", "wrong horse") }
        #expect(wrong != nil)
    }

    @Test func oneEventCarriesTheWholeBatch() async throws {
        let auth = try InProcessAuth { $0.allowImports = true }
        let names = (0..<500).map { "user_\($0)" }
        let reply = try await importUsers(auth, Self.users(names))
        #expect(reply.map(\.username) == names)
        let events = try await auth.events(Auth.UsersImported.self)
        #expect(events.count == 1)
        #expect(events.first?.identities.map(\.id) == reply.map(\.id))
        #expect(try await auth.count("users") == 500)
    }

    @Test func invalidEntriesAreNamedByIndexAndNothingIsWritten() async throws {
        let auth = try InProcessAuth { $0.allowImports = true }
        let error = await expectError("validation_failed", status: 400) {
            _ = try await importUsers(
                auth,
                [
                    .init(username: "good", email: "good@example.com"),
                    .init(username: "no spaces", email: "x@example.com"),
                    .init(username: "fine", email: "not-an-email"),
                    .init(username: "GOOD", email: "other@example.com"),
                    .init(username: "other", email: "Good@example.com"),
                ])
        }
        #expect(
            error?.fields?.map { "\($0.field) \($0.code)" } == [
                "users[1].username invalid_username", "users[2].email invalid_email",
                "users[3].username duplicate_username", "users[4].email duplicate_email",
            ])
        // One wrong field carries its own code, as registration does.
        let one = await expectError("invalid_username", status: 400) {
            _ = try await importUsers(auth, [.init(username: "\u{212A}elvin", email: "k@example.com")])
        }
        #expect(one?.fields?.map(\.field) == ["users[0].username"])
        #expect(try await auth.count("users") == 0)
        #expect(try await auth.outbox().isEmpty)
    }

    @Test func aBatchIsOneToFiveThousandUsers() async throws {
        let auth = try InProcessAuth { $0.allowImports = true }
        for count in [0, Auth.ImportUsers.maxUsers + 1] {
            let error = await expectError("invalid_request", status: 400) {
                _ = try await importUsers(auth, Self.users((0..<count).map { "u\($0)xx" }))
            }
            #expect(error?.fields?.map(\.field) == ["users"])
        }
        #expect(try await auth.count("users") == 0)
    }

    @Test func onlyArgon2idHashesAtLeastAsStrongAsThePolicyAreAccepted() async throws {
        let auth = try InProcessAuth { $0.allowImports = true }
        var argon2i = [CChar](repeating: 0, count: crypto_pwhash_strbytes())
        #expect(
            crypto_pwhash_str_alg(&argon2i, "pw", 2, 3, 19_456 * 1024, crypto_pwhash_alg_argon2i13()) == 0)
        let policy = Self.policyHash
        let refused: [(String, String)] = [
            ("weaker time cost", Self.phc(passes: 1)),
            ("less memory", Self.phc(memoryKiB: 8_192)),
            ("argon2i", String(decoding: argon2i.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)),
            ("not a hash", "correct horse"),
            ("empty", ""),
            ("a bcrypt hash", "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW"),
            ("truncated", String(policy.dropLast(10))),
            ("two lanes", policy.replacingOccurrences(of: ",p=1$", with: ",p=2$")),
            ("more memory than a login can afford", policy.replacingOccurrences(of: "m=19456,", with: "m=4194304,")),
        ]
        for (what, hash) in refused {
            let error = await expectError("invalid_password_hash", status: 400) {
                _ = try await importUsers(auth, Self.users(["alice"]), hash: hash)
            }
            #expect(error?.fields?.map(\.field) == ["passwordHash"], "\(what)")
        }
        #expect(try await auth.count("users") == 0)
        // Stronger than the policy is fine, and those users log in.
        let stronger = Self.phc(passes: 3, memoryKiB: 20_480)
        #expect(try await importUsers(auth, Self.users(["alice"]), hash: stronger).first?.created == true)
        #expect(try await auth.login("alice").identity.username == "alice")
    }

    @Test func sendingAnInterruptedImportAgainAnswersTheExistingAccounts() async throws {
        let auth = try InProcessAuth { $0.allowImports = true }
        let first = try await importUsers(auth, Self.users(["alice", "bob"]))
        // Resumed with the next user added and a new hash (a new salt): the old users keep theirs.
        let again = try await importUsers(auth, Self.users(["Alice", "bob", "carol"]), hash: Self.phc())
        #expect(again.map(\.id).prefix(2) == first.map(\.id)[...])
        #expect(again.map(\.created) == [false, false, true])
        #expect(again.map(\.username) == ["alice", "bob", "carol"])
        let events = try await auth.events(Auth.UsersImported.self)
        #expect(events.map { $0.identities.map(\.username) } == [["alice", "bob"], ["carol"]])
        // Nothing new: no event.
        _ = try await importUsers(auth, Self.users(["carol"]))
        #expect(try await auth.events(Auth.UsersImported.self).count == 2)
        #expect(try await auth.count("users") == 3)
        // A registered account counts as existing too, when both fields are its own.
        let dave = try await auth.register("dave")
        #expect(
            try await importUsers(auth, Self.users(["dave"])) == [.init(username: "dave", id: dave.identity.id, created: false)])
    }

    @Test func aUsernameOrEmailOfAnotherAccountIs409AndNothingOfTheBatchIsWritten() async throws {
        let auth = try InProcessAuth { $0.allowImports = true }
        try await auth.register("alice", email: "alice@example.com")
        let taken = await expectError("username_taken", status: 409) {
            _ = try await importUsers(
                auth,
                [.init(username: "bob", email: "bob@example.com"), .init(username: "alice", email: "other@example.com")])
        }
        #expect(taken?.fields?.map { "\($0.field) \($0.code)" } == ["users[1].username username_taken"])
        let email = await expectError("email_taken", status: 409) {
            _ = try await importUsers(
                auth,
                [.init(username: "bob", email: "bob@example.com"), .init(username: "carol", email: "ALICE@example.com")])
        }
        #expect(email?.fields?.map { "\($0.field) \($0.code)" } == ["users[1].email email_taken"])
        #expect(try await auth.count("users") == 1)
        #expect(try await auth.events(Auth.UsersImported.self).isEmpty)
    }
}
