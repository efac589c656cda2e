import BackendKit
import Foundation
import Messages
import ServiceKit
import Wire

/// Profiles: `profile.check_fields`, `profile.create`, `profile.get_me`, `profile.update_me`,
/// `profile.edit_form`, `profile.header`, `profile.users_by_ids`.
struct ProfileHandlers: Sendable {
    let users: any ProfileStore
    let posts: any PostStore
    let auth: RPCClient
    /// See `ProfileConfiguration.crashOnCreateFile` (tests only).
    var crashOnCreateFile: String? = nil
    /// The operator's word list, applied to names and bios (usernames: AuthService's).
    var words = WordList.empty

    /// Fields `UpdateMe.clear` may name.
    static let clearable: Set<String> = ["phone", "gender", "birthDate", "profilePhotoURL"]

    func register(on host: ServiceHost) {
        host.on(Profile.CheckProfileFields.self) { request, _ in
            let name = Self.registrationName(request.name)
            let errors = ProfileRules.profileFields(
                name: name, bio: nil, birthDate: request.birthDate, gender: request.gender)
            guard errors.isEmpty else { throw ServiceError.validation(errors) }
            if let e = words.check(name, field: "name") { throw ServiceError.objectionableContent([e]) }
            return Empty()
        }
        host.on(Profile.CreateProfile.self) { request, _ in try await createProfile(request) }
        host.on(Profile.GetMe.self) { request, _ in try await require(request.userId).me }
        host.on(Profile.UpdateMe.self) { request, context in try await updateMe(request, context) }
        host.on(Profile.EditForm.self) { request, _ in Self.editForm(try await require(request.userId)) }
        host.on(Profile.Header.self) { request, _ in
            let reply = try await header(request.username)
            // To a user the account blocks, it does not exist; nor to anyone while it is
            // suspended or being deleted.
            if try await users.access(viewer: request.viewerId ?? "", owner: reply.user.id) == .hidden {
                throw ServiceError.notFound("user")
            }
            return reply
        }
        host.on(Profile.UsersByIds.self) { request, _ in
            let found = try await users.users(ids: request.ids)
            var seen = Set<String>()
            return .init(users: request.ids.compactMap { seen.insert($0).inserted ? found[$0]?.publicUser : nil })
        }
    }

    /// The account with `id`. - Throws: 404 `not_found`.
    func require(_ id: String) async throws -> UserRecord {
        guard let user = try await users.user(id: id) else { throw ServiceError.notFound("user") }
        return user
    }

    /// A registration's name as `profile.create` stores it and `profile.check_fields` checks it
    /// (the gateway asks the one before the other with the same value: they must agree).
    static func registrationName(_ name: String?) -> String? {
        name?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stores the identity and the registration's profile fields (idempotent).
    /// - Throws: 400 with every field error, then 422 `objectionable_content` for a name with a
    ///   term of the word list.
    func createProfile(_ request: Profile.CreateProfile.Request) async throws -> Me {
        if let flag = crashOnCreateFile, unlink(flag) == 0 { _exit(70) }
        let name = Self.registrationName(request.name)
        let errors = ProfileRules.profileFields(name: name, bio: nil, birthDate: request.birthDate, gender: request.gender)
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        if let e = words.check(name, field: "name") { throw ServiceError.objectionableContent([e]) }
        return try await users.createProfile(
            request.identity, name: name, birthDate: request.birthDate, gender: request.gender
        ).me
    }

    /// Validates every field — its own here, username and email by AuthService's rules — and
    /// reports them all at once; then the word list (name and bio here, a new username by
    /// AuthService), every refused field at once; changes username/email through AuthService,
    /// then the rest.
    /// - Throws: 400 with every field error, then 422 `objectionable_content` naming every field
    ///   with a term of the word list, 404, AuthService's 409 `username_taken` / `email_taken`.
    func updateMe(_ request: Profile.UpdateMe.Request, _ context: RequestContext) async throws -> Me {
        let current = try await require(request.userId)
        let name = request.name?.trimmingCharacters(in: .whitespacesAndNewlines)
        let bio = request.bio?.trimmingCharacters(in: .whitespacesAndNewlines)
        let username = request.username?.trimmingCharacters(in: .whitespaces)
        let email = request.email?.trimmingCharacters(in: .whitespaces)
        let phone = request.phone?.trimmingCharacters(in: .whitespaces)
        // The photo the profile already has, sent back unchanged (an uploaded one is a path, not a
        // URL the rules accept), is no change.
        var photo = request.profilePhotoURL?.trimmingCharacters(in: .whitespaces)
        if photo != nil && photo == current.profilePhotoURL { photo = nil }
        var errors = ProfileRules.profileFields(name: name, bio: bio, birthDate: request.birthDate, gender: request.gender)
        if let photo, let e = ProfileRules.url(photo, field: "profilePhotoURL") { errors.append(e) }
        if let phone, let e = ProfileRules.phone(phone) { errors.append(e) }
        for key in request.clear where !Self.clearable.contains(key) {
            errors.append(
                FieldError(
                    field: key, .notClearable, message: "only phone, gender, birthDate, profilePhotoURL can be cleared"))
        }
        let newUsername = username.flatMap { $0.lowercased() == current.username ? nil : $0 }
        let newEmail = email.flatMap { $0.lowercased() == current.email ? nil : $0 }
        let changesIdentity = newUsername != nil || newEmail != nil
        if !errors.isEmpty {
            // Every error at once: AuthService's rules for the identity fields too.
            if changesIdentity {
                do {
                    _ = try await auth.call(
                        Auth.CheckIdentityFields.self, .init(email: newEmail, username: newUsername),
                        trace: context.trace)
                } catch let error as ServiceError where error.status == 400 {
                    errors += error.fields ?? []
                } catch let error as ServiceError where error.errorCode == .objectionableContent {
                    // The word list comes after the format rules: not reported with them.
                }
            }
            throw ServiceError.validation(errors)
        }
        let objectionable = [words.check(name, field: "name"), words.check(bio, field: "bio")].compactMap { $0 }
        if !objectionable.isEmpty {
            var refused = objectionable
            // A new username is AuthService's to judge, against the same list: every refused
            // field at once, unless the identity fields break a format rule (400 first).
            if changesIdentity {
                do {
                    _ = try await auth.call(
                        Auth.CheckIdentityFields.self, .init(email: newEmail, username: newUsername),
                        trace: context.trace)
                } catch let error as ServiceError where error.errorCode == .objectionableContent {
                    refused += error.fields ?? []
                }
            }
            throw ServiceError.objectionableContent(refused)
        }
        let identity: Identity? =
            changesIdentity
            ? try await auth.call(
                Auth.ChangeIdentity.self, .init(userId: current.id, username: newUsername, email: newEmail),
                timeoutMs: 3_000, trace: context.trace)
            : nil
        let updated = try await users.update(
            userId: current.id, identity: identity,
            ProfileChanges(
                name: name, bio: bio, profilePhotoURL: photo, phone: phone, gender: request.gender,
                birthDate: request.birthDate, isPrivate: request.isPrivate, clear: Set(request.clear)))
        if identity != nil { context.logger.info("profile.identity_changed", metadata: ["user.id": current.id]) }
        return updated.me
    }

    /// The edit-profile form, with the caller's current values.
    static func editForm(_ user: UserRecord) -> Profile.EditForm.Reply {
        typealias Field = Profile.EditForm.Field
        func field(_ key: String, _ label: String, _ value: String?) -> Field {
            Field(key: key, label: label, placeholder: "Enter \(label)...", value: value)
        }
        return .init(
            profilePhotoURL: user.profilePhotoURL,
            sections: [
                .init(
                    title: "",
                    fields: [
                        field("name", "Name", user.name), field("username", "Username", user.username),
                        field("bio", "Bio", user.bio),
                    ]),
                .init(
                    title: "Private Information",
                    fields: [
                        field("email", "Email", user.email), field("phone", "Phone", user.phone),
                        field("gender", "Gender", user.gender),
                    ]),
            ])
    }

    /// The profile header's ProfileService half: the user and their post count, in one read when
    /// the replica knows the name. - Throws: 404 for an unknown username.
    func header(_ username: String) async throws -> Profile.Header.Reply {
        if let (user, postCount) = try await users.header(username: username) {
            return .init(user: user.publicUser, postCount: postCount)
        }
        guard let key = Username.lookupKey(username), let user = try await users.users(usernames: [key])[key] else {
            throw ServiceError.notFound("user")
        }
        return .init(user: user.publicUser, postCount: try await posts.count(ownerId: user.id))
    }
}
