import Foundation
import Shared
import TestSupport
import Testing

/// Profiles: creation after registration, the caller's `Me`, the header, batch lookup, the
/// edit form and partial updates with field-level validation.
@Suite struct ProfileTests {
    @Test func createProfileStoresRegistrationFieldsAndIsIdempotent() async throws {
        let h = try await ProfileHarness.start()
        let me = try await h.register("alice", name: "Alice A", birthDate: "1990-02-28", gender: "female")
        #expect(me.username == "alice" && me.email == "alice@example.com")
        #expect(me.name == "Alice A" && me.birthDate == "1990-02-28" && me.gender == "female")
        #expect(me.bio == "" && me.phone == nil && me.profilePhotoURL == nil)
        #expect(me.joinDate.hasSuffix("Z"))
        let again = try await h.profile.call(
            Profile.CreateProfile.self,
            .init(
                identity: Identity(id: me.id, username: "alice", email: "alice@example.com", version: 1), name: "Alice A",
                birthDate: "1990-02-28", gender: "female"))
        #expect(again == me)
        #expect(try await h.profile.call(Profile.GetMe.self, .init(userId: me.id)) == me)
    }

    @Test func createProfileRejectsBadBirthDateAndGender() async throws {
        let h = try await ProfileHarness.start()
        let reg = try await h.auth.call(
            Auth.Register.self, .init(email: "b@example.com", username: "bob", password: "password-123"), timeoutMs: 10_000)
        let error = await serviceError {
            try await h.profile.call(
                Profile.CreateProfile.self, .init(identity: reg.identity, name: nil, birthDate: "2001-02-29", gender: "robot"))
        }
        #expect(error?.status == 400)
        #expect(Set(error?.fields?.map(\.field) ?? []) == ["birthDate", "gender"])
    }

    @Test func headerCountsPostsAndUnknownIs404() async throws {
        let h = try await ProfileHarness.start()
        let alice = try await h.register("alice", name: "Alice")
        for _ in 0..<3 { try await h.post(alice) }
        let header = try await h.profile.call(Profile.Header.self, .init(username: "ALICE"))
        #expect(header.user == PublicUser(id: alice.id, username: "alice", name: "Alice", bio: "", profilePhotoURL: nil))
        #expect(header.postCount == 3)
        #expect(await serviceError { try await h.profile.call(Profile.Header.self, .init(username: "nobody")) }?.status == 404)
        #expect(await serviceError { try await h.profile.call(Profile.GetMe.self, .init(userId: "nope")) }?.status == 404)
    }

    @Test func identityArrivesFromAuthWithoutCreateProfile() async throws {
        let h = try await ProfileHarness.start()
        // Only AuthService knows this account: the replica learns it from the event or, if the
        // lookup comes first, from auth.lookup_users.
        let reg = try await h.auth.call(
            Auth.Register.self, .init(email: "carol@example.com", username: "carol", password: "password-123"), timeoutMs: 10_000)
        let header = try await h.profile.call(Profile.Header.self, .init(username: "carol"))
        #expect(header.user.id == reg.identity.id && header.postCount == 0)
        let me = try await h.profile.call(Profile.GetMe.self, .init(userId: reg.identity.id))
        #expect(me.email == "carol@example.com")
    }

    @Test func usersByIdsReturnsKnownUsersInRequestOrder() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice")
        let b = try await h.register("bob", name: "Bob")
        let reply = try await h.profile.call(Profile.UsersByIds.self, .init(ids: [b.id, "unknown", a.id, b.id]))
        #expect(reply.users.map(\.username) == ["bob", "alice"])
        #expect(reply.users[0].name == "Bob")
    }

    @Test func editFormHasProfileAndPrivateSections() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice", name: "Alice", gender: "custom")
        let form = try await h.profile.call(Profile.EditForm.self, .init(userId: a.id))
        #expect(form.sections.count == 2)
        #expect(form.sections[0].title == "")
        #expect(form.sections[0].fields.map(\.key) == ["name", "username", "bio"])
        #expect(form.sections[0].fields.map(\.label) == ["Name", "Username", "Bio"])
        #expect(form.sections[0].fields.map(\.value) == ["Alice", "alice", ""])
        #expect(form.sections[1].title == "Private Information")
        #expect(form.sections[1].fields.map(\.key) == ["email", "phone", "gender"])
        #expect(form.sections[1].fields.map(\.value) == ["alice@example.com", nil, "custom"])
        #expect(form.sections[0].fields[0].placeholder == "Enter Name...")
        #expect(form.profilePhotoURL == nil)
    }

    @Test func updateMeReportsEveryFieldErrorAndChangesNothing() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice", name: "Alice")
        let tomorrow = Timestamp.format(ms: Timestamp.nowMs() + 2 * 86_400_000).prefix(10)
        let error = await serviceError {
            try await h.profile.call(
                Profile.UpdateMe.self,
                .init(
                    userId: a.id, name: String(repeating: "n", count: 101), username: "Bad Name!",
                    bio: String(repeating: "b", count: 151),
                    profilePhotoURL: "/relative.jpg", email: "not-an-email", phone: "call me", gender: "robot",
                    birthDate: String(tomorrow))
            )
        }
        #expect(error?.status == 400 && error?.code == "validation_failed")
        #expect(
            Set(error?.fields?.map(\.field) ?? [])
                == ["name", "username", "bio", "profilePhotoURL", "email", "phone", "gender", "birthDate"])
        #expect(try await h.profile.call(Profile.GetMe.self, .init(userId: a.id)) == a)
        for bad in ["1990-13-01", "1990-2-01", "19900201", "2023-02-29"] {
            let e = await serviceError { try await h.profile.call(Profile.UpdateMe.self, .init(userId: a.id, birthDate: bad)) }
            #expect(e?.fields?.first?.code == "invalid_birth_date", "\(bad)")
        }
        for bad in ["ftp://x.example/p.jpg", "https://", "not a url"] {
            let e = await serviceError {
                try await h.profile.call(Profile.UpdateMe.self, .init(userId: a.id, profilePhotoURL: bad))
            }
            #expect(e?.fields?.first?.field == "profilePhotoURL", "\(bad)")
        }
        let unclearable = await serviceError {
            try await h.profile.call(Profile.UpdateMe.self, .init(userId: a.id, clear: ["name"]))
        }
        #expect(unclearable?.status == 400)
    }

    @Test func updateMeIsPartialAndClearsOptionalFields() async throws {
        let h = try await ProfileHarness.start()
        let a = try await h.register("alice", name: "Alice")
        let updated = try await h.profile.call(
            Profile.UpdateMe.self,
            .init(
                userId: a.id, bio: String(repeating: "b", count: 150), profilePhotoURL: "https://cdn.example.com/me.jpg",
                phone: "+1 (555) 010-2030", gender: "prefer_not_to_say", birthDate: "2000-02-29"))
        #expect(updated.name == "Alice" && updated.username == "alice")
        #expect(updated.bio.count == 150 && updated.phone == "+1 (555) 010-2030" && updated.gender == "prefer_not_to_say")
        #expect(updated.birthDate == "2000-02-29" && updated.profilePhotoURL == "https://cdn.example.com/me.jpg")
        #expect(updated.joinDate == a.joinDate)
        let cleared = try await h.profile.call(
            Profile.UpdateMe.self, .init(userId: a.id, name: "A", clear: ["phone", "profilePhotoURL"]))
        #expect(
            cleared.name == "A" && cleared.phone == nil && cleared.profilePhotoURL == nil && cleared.gender == "prefer_not_to_say"
        )
        #expect(try await h.profile.call(Profile.GetMe.self, .init(userId: a.id)) == cleared)
        let header = try await h.profile.call(Profile.Header.self, .init(username: "alice"))
        #expect(header.user.name == "A")
        #expect(try await h.eventTypes().filter { $0 == Profile.ProfileChanged.type }.count == 2)
    }

    @Test func usernameChangeIsReflectedEverywhere() async throws {
        let h = try await ProfileHarness.start()
        let alice = try await h.register("alice", name: "Alice")
        let bob = try await h.register("bob")
        let post = try await h.post(alice, caption: "hi", tagged: ["bob"])
        _ = try await h.post(bob, tagged: ["alice"])

        let me = try await h.profile.call(
            Profile.UpdateMe.self, .init(userId: alice.id, username: "Alice.New", email: "NEW@example.com"))
        #expect(me.username == "alice.new" && me.email == "new@example.com")

        #expect(try await h.profile.call(Profile.Header.self, .init(username: "alice.new")).user.id == alice.id)
        #expect(await serviceError { try await h.profile.call(Profile.Header.self, .init(username: "alice")) }?.status == 404)
        let oldGrid = await serviceError {
            try await h.profile.call(
                Profile.ListPosts.self, .init(viewerId: bob.id, username: "alice", tagged: false, page: .init()))
        }
        #expect(oldGrid?.status == 404)
        let grid = try await h.allPosts(bob, "alice.new")
        #expect(grid.map(\.id) == [post.id] && grid[0].owner.username == "alice.new")
        let taggedTab = try await h.allPosts(bob, "alice.new", tagged: true)
        #expect(taggedTab.count == 1 && taggedTab[0].taggedUsers.map(\.username) == ["alice.new"])
        #expect(
            try await h.profile.call(Profile.GetPost.self, .init(viewerId: bob.id, postId: post.id)).owner.username == "alice.new"
        )
        #expect(try await h.profile.call(Profile.UsersByIds.self, .init(ids: [alice.id])).users.map(\.username) == ["alice.new"])
        #expect(
            try await h.profile.call(Profile.EditForm.self, .init(userId: alice.id)).sections[0].fields[1].value == "alice.new")
        // AuthService agrees: the new name logs in, the old one does not.
        let login = try await h.auth.call(Auth.Login.self, .init(login: "alice.new", password: "password-123"), timeoutMs: 10_000)
        #expect(login.identity.id == alice.id)
        let oldLogin = await serviceError {
            try await h.auth.call(Auth.Login.self, .init(login: "alice", password: "password-123"), timeoutMs: 10_000)
        }
        #expect(oldLogin?.status == 401)
        // The old name is free again and can be taken by a new account.
        let carol = try await h.register("alice")
        #expect(try await h.profile.call(Profile.Header.self, .init(username: "alice")).user.id == carol.id)
        #expect(try await h.eventTypes().contains(Profile.ProfileChanged.type))
    }

    @Test func takenUsernameOrEmailIsAConflictFromAuth() async throws {
        let h = try await ProfileHarness.start()
        let alice = try await h.register("alice")
        try await h.register("bob")
        let name = await serviceError {
            try await h.profile.call(Profile.UpdateMe.self, .init(userId: alice.id, username: "BOB"))
        }
        #expect(name?.status == 409 && name?.code == "username_taken")
        let email = await serviceError {
            try await h.profile.call(Profile.UpdateMe.self, .init(userId: alice.id, email: "bob@example.com"))
        }
        #expect(email?.status == 409 && email?.code == "email_taken")
        // Nothing changed, including fields sent alongside the rejected username.
        let after = await serviceError {
            try await h.profile.call(Profile.UpdateMe.self, .init(userId: alice.id, name: "Changed", username: "bob"))
        }
        #expect(after?.status == 409)
        #expect(try await h.profile.call(Profile.GetMe.self, .init(userId: alice.id)).name == "")
        // Sending the current username is not a change.
        #expect(try await h.profile.call(Profile.UpdateMe.self, .init(userId: alice.id, username: "alice")).username == "alice")
    }
}
