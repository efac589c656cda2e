import Foundation
import Shared

extension ProfileService {
    /// Fields `UpdateMe.clear` may name.
    static let clearable: Set<String> = ["phone", "gender", "birthDate", "profilePhotoURL"]

    func registerProfiles(on host: ServiceHost) {
        host.on(Profile.CreateProfile.self) { request, _ in try await createProfile(request) }
        host.on(Profile.GetMe.self) { request, _ in try await directory.require(id: request.userId).me }
        host.on(Profile.UpdateMe.self) { request, _ in try await updateMe(request) }
        host.on(Profile.EditForm.self) { request, _ in
            editForm(try await directory.require(id: request.userId))
        }
        host.on(Profile.Header.self) { request, _ in try await header(request.username) }
        host.on(Profile.UsersByIds.self) { request, _ in
            let found = try await directory.users(ids: request.ids)
            var seen = Set<String>()
            return .init(
                users: request.ids.compactMap { id in seen.insert(id).inserted ? found[id]?.publicUser : nil
                })
        }
    }

    /// Stores the identity and the registration's profile fields (idempotent; the join date is
    /// set when the row is first created).
    /// - Throws: 400 with `fields` for a bad `name`, `birthDate` or `gender`.
    func createProfile(_ request: Profile.CreateProfile.Request) async throws -> Me {
        let name = request.name?.trimmingCharacters(in: .whitespacesAndNewlines)
        var errors: [FieldError] = []
        if let name, let e = FieldRules.name(name) { errors.append(e) }
        if let b = request.birthDate, let e = FieldRules.birthDate(b) { errors.append(e) }
        if let g = request.gender, let e = FieldRules.gender(g) { errors.append(e) }
        if !errors.isEmpty { throw ServiceError.validation(errors) }
        let identity = request.identity
        return try await database.write { tx in
            try UserRows.apply(identity, tx)
            if let name { try tx.query("UPDATE users SET name = ? WHERE id = ?", [name, identity.id]) }
            if let b = request.birthDate {
                try tx.query("UPDATE users SET birth_date = ? WHERE id = ?", [b, identity.id])
            }
            if let g = request.gender {
                try tx.query("UPDATE users SET gender = ? WHERE id = ?", [g, identity.id])
            }
            guard let user = try UserRows.byId(identity.id, tx.connection) else {
                throw ServiceError.internal("profile vanished")
            }
            return user.me
        }
    }

    /// Validates every field, changes username/email through AuthService, then stores the rest.
    /// - Throws: 400 with every field error, 404, AuthService's 409 `username_taken` / `email_taken`.
    func updateMe(_ request: Profile.UpdateMe.Request) async throws -> Me {
        let current = try await directory.require(id: request.userId)
        let name = request.name?.trimmingCharacters(in: .whitespacesAndNewlines)
        let bio = request.bio?.trimmingCharacters(in: .whitespacesAndNewlines)
        let username = request.username?.trimmingCharacters(in: .whitespaces).lowercased()
        let email = request.email?.trimmingCharacters(in: .whitespaces).lowercased()
        let phone = request.phone?.trimmingCharacters(in: .whitespaces)
        let photo = request.profilePhotoURL?.trimmingCharacters(in: .whitespaces)
        var errors: [FieldError] = []
        if let name, let e = FieldRules.name(name) { errors.append(e) }
        if let username, let e = FieldRules.username(username) { errors.append(e) }
        if let bio, let e = FieldRules.bio(bio) { errors.append(e) }
        if let photo, let e = FieldRules.httpURL(photo, field: "profilePhotoURL") { errors.append(e) }
        if let email, let e = FieldRules.email(email) { errors.append(e) }
        if let phone, let e = FieldRules.phone(phone) { errors.append(e) }
        if let g = request.gender, let e = FieldRules.gender(g) { errors.append(e) }
        if let b = request.birthDate, let e = FieldRules.birthDate(b) { errors.append(e) }
        for key in request.clear where !Self.clearable.contains(key) {
            errors.append(
                FieldError(
                    field: key, code: "not_clearable",
                    message: "only phone, gender, birthDate, profilePhotoURL can be cleared"))
        }
        if !errors.isEmpty { throw ServiceError.validation(errors) }

        let newUsername = username.flatMap { $0 == current.username ? nil : $0 }
        let newEmail = email.flatMap { $0 == current.email ? nil : $0 }
        let identity: Identity? =
            newUsername == nil && newEmail == nil
            ? nil
            : try await auth.call(
                Auth.ChangeIdentity.self, .init(userId: current.id, username: newUsername, email: newEmail),
                timeoutMs: 3_000)
        let clear = Set(request.clear)
        let updated = try await database.write { tx -> UserRecord in
            if let identity { try UserRows.apply(identity, tx) }
            var sets: [String] = []
            var params: [any SQLBindable] = []
            func set(_ column: String, _ value: String?) {
                sets.append("\(column) = ?")
                params.append(value)
            }
            if let name { set("name", name) }
            if let bio { set("bio", bio) }
            if clear.contains("profilePhotoURL") {
                set("photo_url", nil)
            } else if let photo {
                set("photo_url", photo)
            }
            if clear.contains("phone") { set("phone", nil) } else if let phone { set("phone", phone) }
            if clear.contains("gender") {
                set("gender", nil)
            } else if let g = request.gender {
                set("gender", g)
            }
            if clear.contains("birthDate") {
                set("birth_date", nil)
            } else if let b = request.birthDate {
                set("birth_date", b)
            }
            if !sets.isEmpty {
                try tx.query(
                    "UPDATE users SET \(sets.joined(separator: ", ")) WHERE id = ?", params + [current.id])
            }
            guard let after = try UserRows.byId(current.id, tx.connection) else {
                throw ServiceError.notFound("user")
            }
            if after.publicUser != current.publicUser {
                try tx.emit(Profile.ProfileChanged(user: after.publicUser))
            }
            return after
        }
        if identity != nil {
            logger.info("profile.identity_changed", metadata: ["user": current.id])
        }
        return updated.me
    }

    /// The edit-profile form, with the caller's current values.
    func editForm(_ user: UserRecord) -> Profile.EditForm.Reply {
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

    /// The profile header: the user and their post count. A replica hit costs one read; a
    /// miss (or an ambiguous name) goes through `UserDirectory`'s AuthService fallback.
    /// - Throws: 404 for an unknown username.
    func header(_ username: String) async throws -> Profile.Header.Reply {
        let name = username.lowercased()
        let count: @Sendable (String, SQLiteConnection) throws -> Int = { id, conn in
            Int(try conn.queryOne("SELECT COUNT(*) FROM posts WHERE owner_id = ?", [id])?.int(0) ?? 0)
        }
        let hit = try await database.read { conn -> Profile.Header.Reply? in
            let rows = try UserRows.byUsername(name, conn)
            guard rows.count == 1 else { return nil }
            return .init(user: rows[0].publicUser, postCount: try count(rows[0].id, conn))
        }
        if let hit { return hit }
        guard let user = try await directory.user(username: name) else { throw ServiceError.notFound("user") }
        return .init(user: user.publicUser, postCount: try await database.read { try count(user.id, $0) })
    }
}
