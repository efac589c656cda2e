import Foundation
import Messages
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// `ProfileHandlers` in-process: profile creation after registration, `Me`, the header, batch
/// lookup, the edit form, `profile.check_fields`, and partial updates with every field error
/// reported at once and username/email changes going through AuthService.
@Suite struct ProfileHandlerTests {
    @Test func createProfileStoresRegistrationFieldsAndIsIdempotent() async throws {
        let f = try await ProfileFixture()
        let me = try await f.register("alice", name: "  Alice A ", birthDate: "1990-02-28", gender: "female")
        #expect(me.username == "alice" && me.email == "alice@example.com")
        #expect(me.name == "Alice A" && me.birthDate == "1990-02-28" && me.gender == "female")
        #expect(me.bio == "" && me.phone == nil && me.profilePhotoURL == nil)
        #expect(me.joinDate.hasSuffix("Z"))
        let identity = try #require(f.auth.identity(me.id))
        let again = try await f.app.profiles.createProfile(
            .init(identity: identity, name: "Alice A", birthDate: "1990-02-28", gender: "female"))
        #expect(again == me)
        #expect(try await f.call(Profile.GetMe.self, .init(userId: me.id)) == me)
        // Each creation publishes the profile's public fields (`profile.user.changed`, for the
        // actors NotificationService shows); the retry's are the same.
        let published = try await f.events(Profile.ProfileChanged.self)
        #expect(published.map(\.user.id) == [me.id] && published.map(\.user.name) == [me.name])
        #expect(try await f.eventTypes() == [Profile.ProfileChanged.type])
    }

    @Test func createProfileReportsBadBirthDateAndGenderTogether() async throws {
        let f = try await ProfileFixture()
        let identity = try await f.auth.register("bob", publish: false)
        let error = await serviceError {
            try await f.call(
                Profile.CreateProfile.self,
                .init(identity: identity, name: "B\u{7}ob", birthDate: "2001-02-29", gender: "robot"))
        }
        #expect(error?.status == 400 && error?.code == "invalid_field")
        #expect(fieldCodes(error) == ["name": "invalid_field", "birthDate": "invalid_birth_date", "gender": "invalid_gender"])
        // Nothing was stored: the identity is only known after a lookup, with an empty profile.
        let me = try await f.call(Profile.GetMe.self, .init(userId: identity.id))
        #expect(me.birthDate == nil && me.gender == nil && me.name == "")
    }

    @Test func checkFieldsReportsEveryFieldErrorAtOnceAndStoresNothing() async throws {
        let f = try await ProfileFixture()
        let error = await serviceError {
            try await f.call(
                Profile.CheckProfileFields.self,
                .init(name: "two\nlines", birthDate: "1899-12-31", gender: "Female"))
        }
        #expect(error?.status == 400 && error?.code == "invalid_field")
        #expect(fieldCodes(error) == ["name": "invalid_field", "birthDate": "invalid_birth_date", "gender": "invalid_gender"])
        let tooLong = await serviceError {
            try await f.call(
                Profile.CheckProfileFields.self, .init(name: String(repeating: "n", count: 101), birthDate: nil, gender: nil))
        }
        #expect(
            tooLong?.code == "invalid_field" && tooLong?.fields?.first?.code == "too_long"
                && tooLong?.fields?.map(\.field) == ["name"])
        _ = try await f.call(
            Profile.CheckProfileFields.self, .init(name: "Alice", birthDate: "2000-02-29", gender: "prefer_not_to_say"))
        _ = try await f.call(Profile.CheckProfileFields.self, .init(name: nil, birthDate: nil, gender: nil))
        #expect(try await f.database.read { try $0.scalar("SELECT COUNT(*) FROM profiles") } == 0)
        #expect(try await f.eventTypes().isEmpty)
    }

    /// The gateway asks `profile.check_fields` before registering and then `profile.create` with
    /// the same values: a name the one accepts the other must accept, and the other way round.
    @Test func checkFieldsJudgesANameAsCreateProfileDoes() async throws {
        let f = try await ProfileFixture()
        // Surrounding whitespace is trimmed (the first five are fine); what is left is judged.
        let names = [
            "Alice", " Alice ", "Alice\t", "\nAlice", String(repeating: "n", count: 100) + " ",
            String(repeating: "n", count: 101), "Al\u{0}ice", "Al\nice", "Al\u{85}ice",
        ]
        for (i, name) in names.enumerated() {
            var checked = true
            do {
                _ = try await f.call(Profile.CheckProfileFields.self, .init(name: name, birthDate: nil, gender: nil))
            } catch let error as ServiceError where error.status == 400 {
                checked = false
            }
            var created = true
            do {
                let identity = try await f.auth.register("user\(i)", publish: false)
                _ = try await f.app.profiles.createProfile(.init(identity: identity, name: name, birthDate: nil, gender: nil))
            } catch let error as ServiceError where error.status == 400 {
                created = false
            }
            #expect(checked == created, "name \(name.debugDescription): check_fields \(checked), create \(created)")
            #expect(created == (i < 5), "name \(name.debugDescription)")
        }
    }

    @Test func headerCountsPostsAndUnknownIs404() async throws {
        let f = try await ProfileFixture()
        let alice = try await f.register("alice", name: "Alice")
        for _ in 0..<3 { try await f.post(alice) }
        let header = try await f.app.profiles.header("ALICE")
        #expect(header.user == PublicUser(id: alice.id, username: "alice", name: "Alice", bio: "", profilePhotoURL: nil))
        #expect(header.postCount == 3)
        #expect(try await f.call(Profile.Header.self, .init(username: "alice")).postCount == 3)
        #expect(await serviceError { try await f.app.profiles.header("nobody") }?.status == 404)
        #expect(await serviceError { try await f.call(Profile.GetMe.self, .init(userId: "nope")) }?.status == 404)
    }

    /// An account that only AuthService knows (its event not applied yet) is found through
    /// `auth.lookup_users`, once, and gets its profile row then.
    @Test func anAccountOnlyAuthServiceKnowsIsLookedUpOnce() async throws {
        let f = try await ProfileFixture()
        let carol = try await f.auth.register("carol", publish: false)
        let header = try await f.app.profiles.header("Carol")
        #expect(header.user.id == carol.id && header.postCount == 0)
        #expect(f.auth.lookups.map(\.usernames) == [["carol"]])
        let me = try await f.call(Profile.GetMe.self, .init(userId: carol.id))
        #expect(me.email == "carol@example.com" && me.joinDate.hasSuffix("Z"))
        #expect(f.auth.lookups.count == 1, "the second read is a replica hit")
        // An account nobody knows is a 404 after one lookup.
        #expect(await serviceError { try await f.app.profiles.header("ghost") }?.status == 404)
        #expect(f.auth.lookups.count == 2)
    }

    @Test func usersByIdsReturnsKnownUsersInRequestOrder() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob", name: "Bob")
        let reply = try await f.call(Profile.UsersByIds.self, .init(ids: [b.id, "unknown", a.id, b.id]))
        #expect(reply.users.map(\.username) == ["bob", "alice"])
        #expect(reply.users[0] == PublicUser(id: b.id, username: "bob", name: "Bob", bio: "", profilePhotoURL: nil))
        #expect(try await f.call(Profile.UsersByIds.self, .init(ids: [])).users.isEmpty)
    }

    @Test func editFormHasProfileAndPrivateSections() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice", name: "Alice", gender: "custom")
        let form = try await f.call(Profile.EditForm.self, .init(userId: a.id))
        #expect(form.sections.count == 2)
        #expect(form.sections[0].title == "")
        #expect(form.sections[0].fields.map(\.key) == ["name", "username", "bio"])
        #expect(form.sections[0].fields.map(\.label) == ["Name", "Username", "Bio"])
        #expect(form.sections[0].fields.map(\.value) == ["Alice", "alice", ""])
        #expect(form.sections[1].title == "Private Information")
        #expect(form.sections[1].fields.map(\.key) == ["email", "phone", "gender"])
        #expect(form.sections[1].fields.map(\.label) == ["Email", "Phone", "Gender"])
        #expect(form.sections[1].fields.map(\.value) == ["alice@example.com", nil, "custom"])
        #expect(form.sections.flatMap(\.fields).allSatisfy { $0.placeholder == "Enter \($0.label)..." })
        #expect(form.profilePhotoURL == nil)
        #expect(await serviceError { try await f.call(Profile.EditForm.self, .init(userId: "nope")) }?.status == 404)
    }

    @Test func updateMeReportsEveryFieldErrorAtOnceAndChangesNothing() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice", name: "Alice")
        let tomorrow = Timestamp.format(ms: Timestamp.nowMs() + 2 * 86_400_000).prefix(10)
        let error = await serviceError {
            try await f.app.profiles.updateMe(
                .init(
                    userId: a.id, name: String(repeating: "n", count: 101), username: "Bad Name!",
                    bio: String(repeating: "b", count: 151), profilePhotoURL: "/relative.jpg", email: "not-an-email",
                    phone: "call me", gender: "robot", birthDate: String(tomorrow), clear: ["name"]),
                f.context(Profile.UpdateMe.type))
        }
        #expect(error?.status == 400 && error?.code == "invalid_field")
        #expect(
            fieldCodes(error) == [
                "name": "not_clearable", "username": "invalid_username", "bio": "too_long", "profilePhotoURL": "invalid_url",
                "email": "invalid_email", "phone": "invalid_phone", "gender": "invalid_gender",
                "birthDate": "invalid_birth_date",
            ])
        #expect(error?.fields?.filter { $0.field == "name" }.map(\.code) == ["too_long", "not_clearable"])
        // AuthService was asked to check its fields, not to change them.
        #expect(f.auth.checks.map(\.username) == ["Bad Name!"] && f.auth.checks.map(\.email) == ["not-an-email"])
        #expect(f.auth.changes.isEmpty)
        #expect(try await f.call(Profile.GetMe.self, .init(userId: a.id)) == a)
        #expect(try await f.eventTypes().isEmpty)
    }

    @Test func updateMeRefusesEachBadValue() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice", name: "Alice")
        func codes(_ request: Profile.UpdateMe.Request) async -> [String: String] {
            fieldCodes(await serviceError { try await f.app.profiles.updateMe(request, f.context(Profile.UpdateMe.type)) })
        }
        for bad in ["1990-13-01", "1990-2-01", "19900201", "2023-02-29", "1899-12-31", "１９９０-01-01"] {
            #expect(await codes(.init(userId: a.id, birthDate: bad)) == ["birthDate": "invalid_birth_date"], "\(bad)")
        }
        for bad in ["", "12345678901234567890123456789012", "+-()", "555 0101 x"] {
            #expect(await codes(.init(userId: a.id, phone: bad)) == ["phone": "invalid_phone"], "\(bad)")
        }
        for bad in ["ftp://x.example/p.jpg", "https://", "not a url", "//x.example/p.jpg"] {
            #expect(await codes(.init(userId: a.id, profilePhotoURL: bad)) == ["profilePhotoURL": "invalid_url"], "\(bad)")
        }
        // Only AuthService judges usernames and emails: a bad one alone is its 400.
        #expect(await codes(.init(userId: a.id, username: "ab")) == ["username": "invalid_username"])
        #expect(f.auth.changes.count == 1)
        #expect(try await f.call(Profile.GetMe.self, .init(userId: a.id)) == a)
        #expect(await serviceError { try await f.app.profiles.updateMe(.init(userId: "nope"), f.context("t")) }?.status == 404)
    }

    @Test func updateMeIsPartialAndClearsOptionalFields() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice", name: "Alice")
        let updated = try await f.call(
            Profile.UpdateMe.self,
            .init(
                userId: a.id, bio: String(repeating: "b", count: 150), profilePhotoURL: " https://cdn.example.com/me.jpg ",
                phone: "+1 (555) 010-2030", gender: "prefer_not_to_say", birthDate: "2000-02-29"))
        #expect(updated.name == "Alice" && updated.username == "alice")
        #expect(updated.bio.count == 150 && updated.phone == "+1 (555) 010-2030" && updated.gender == "prefer_not_to_say")
        #expect(updated.birthDate == "2000-02-29" && updated.profilePhotoURL == "https://cdn.example.com/me.jpg")
        #expect(updated.joinDate == a.joinDate)
        let cleared = try await f.call(
            Profile.UpdateMe.self, .init(userId: a.id, name: "A", clear: ["phone", "profilePhotoURL"]))
        #expect(cleared.name == "A" && cleared.phone == nil && cleared.profilePhotoURL == nil)
        #expect(cleared.gender == "prefer_not_to_say" && cleared.birthDate == "2000-02-29" && cleared.bio == updated.bio)
        #expect(try await f.call(Profile.GetMe.self, .init(userId: a.id)) == cleared)
        #expect(try await f.app.profiles.header("alice").user.name == "A")
        // A private change (gender, birth date, phone) is not published; public ones are, with
        // the new public profile.
        _ = try await f.call(Profile.UpdateMe.self, .init(userId: a.id, gender: "female", clear: ["birthDate"]))
        let changes = try await f.events(Profile.ProfileChanged.self)
        #expect(changes.map(\.user.bio.count) == [150, 150])
        #expect(changes.map(\.user.name) == ["Alice", "A"])
        #expect(changes.map(\.user.profilePhotoURL) == ["https://cdn.example.com/me.jpg", nil])
        #expect(f.auth.changes.isEmpty && f.auth.checks.isEmpty)
    }

    @Test func usernameAndEmailChangesGoThroughAuthServiceAndShowEverywhere() async throws {
        let f = try await ProfileFixture()
        let alice = try await f.register("alice", name: "Alice")
        let bob = try await f.register("bob")
        let post = try await f.post(alice, caption: "hi", tagged: ["bob"])
        _ = try await f.post(bob, tagged: ["alice"])

        let me = try await f.app.profiles.updateMe(
            .init(userId: alice.id, name: "Alice N", username: " Alice.New ", email: "NEW@example.com"),
            f.context(Profile.UpdateMe.type))
        #expect(me.username == "alice.new" && me.email == "new@example.com" && me.name == "Alice N")
        #expect(f.auth.changes.count == 1)
        #expect(f.auth.changes.first?.username == "Alice.New" && f.auth.changes.first?.email == "NEW@example.com")

        #expect(try await f.app.profiles.header("alice.new").user.id == alice.id)
        #expect(await serviceError { try await f.app.profiles.header("alice") }?.status == 404)
        #expect(await serviceError { try await f.postsPage(bob, "alice") }?.status == 404)
        let grid = try await f.allPosts(bob, "alice.new")
        #expect(grid.map(\.id) == [post.id] && grid[0].owner.username == "alice.new")
        let taggedTab = try await f.allPosts(bob, "alice.new", tagged: true)
        #expect(taggedTab.count == 1 && taggedTab[0].taggedUsers.map(\.username) == ["alice.new"])
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: bob.id, postId: post.id)).owner.username == "alice.new")
        #expect(try await f.call(Profile.UsersByIds.self, .init(ids: [alice.id])).users.map(\.username) == ["alice.new"])
        #expect(try await f.call(Profile.EditForm.self, .init(userId: alice.id)).sections[0].fields[1].value == "alice.new")
        // One event for the public change, carrying the new username.
        #expect(try await f.events(Profile.ProfileChanged.self).map(\.user.username) == ["alice.new"])
        // The old name is free again and can be taken by a new account.
        let carol = try await f.register("alice")
        #expect(try await f.app.profiles.header("alice").user.id == carol.id)
    }

    @Test func takenUsernameOrEmailIsAConflictFromAuthAndChangesNothing() async throws {
        let f = try await ProfileFixture()
        let alice = try await f.register("alice")
        try await f.register("bob")
        let context = f.context(Profile.UpdateMe.type)
        let name = await serviceError { try await f.app.profiles.updateMe(.init(userId: alice.id, username: "BOB"), context) }
        #expect(name?.status == 409 && name?.code == "username_taken")
        let email = await serviceError {
            try await f.app.profiles.updateMe(.init(userId: alice.id, email: "bob@example.com"), context)
        }
        #expect(email?.status == 409 && email?.code == "email_taken")
        // Nothing changed, including fields sent alongside the rejected username.
        let both = await serviceError {
            try await f.app.profiles.updateMe(.init(userId: alice.id, name: "Changed", username: "bob"), context)
        }
        #expect(both?.status == 409)
        #expect(try await f.call(Profile.GetMe.self, .init(userId: alice.id)) == alice)
        #expect(try await f.eventTypes().isEmpty)
        // Sending the current username or email (in any case) is not a change: AuthService is
        // not asked.
        let asked = f.auth.changes.count
        let same = try await f.app.profiles.updateMe(
            .init(userId: alice.id, username: "ALICE", email: "Alice@Example.com"), context)
        #expect(same == alice && f.auth.changes.count == asked)
    }
}
