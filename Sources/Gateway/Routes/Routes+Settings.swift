import Foundation
import Shared

/// Settings and the edit-profile form (ProfileService).
extension Gateway {
    /// `GET /v1/settings` → `{sections: [{title, items: [{id, title, action}]}]}`.
    func getSettings(_ call: Call) async throws -> HTTPResponse {
        reply(
            200,
            JSONOut.tree(try await profile.call(Profile.GetSettings.self, .init(userId: call.userId))))
    }

    /// `PATCH /v1/settings` `{saveOriginalPosts: bool}` → the settings.
    func updateSettings(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["saveOriginalPosts"])
        let save = try body.bool("saveOriginalPosts")
        let settings = try await profile.call(
            Profile.UpdateSettings.self, .init(userId: call.userId, saveOriginalPosts: save))
        return reply(200, JSONOut.tree(settings))
    }

    /// `GET /v1/me/profile/edit` → `{profilePhotoURL, sections: [{title, fields: [{key, label, placeholder, value}]}]}`.
    func editForm(_ call: Call) async throws -> HTTPResponse {
        let form = try await profile.call(Profile.EditForm.self, .init(userId: call.userId))
        let sections: [[String: Any]] = form.sections.map { section in
            [
                "title": section.title,
                "fields": section.fields.map { f -> [String: Any] in
                    [
                        "key": f.key, "label": f.label, "placeholder": f.placeholder,
                        "value": JSONOut.orNull(f.value),
                    ]
                },
            ]
        }
        return reply(
            200, ["profilePhotoURL": JSONOut.orNull(form.profilePhotoURL), "sections": sections])
    }

    /// `PATCH /v1/me/profile` with any of `{name, username, bio, profilePhotoURL, email, phone,
    /// gender, birthDate}` → `Me`. `null` clears `profilePhotoURL`, `phone`, `gender`, `birthDate`.
    func updateProfile(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        let clearable: Set<String> = ["profilePhotoURL", "phone", "gender", "birthDate"]
        try body.allowOnly(clearable.union(["name", "username", "bio", "email"]))
        var request = Profile.UpdateMe.Request(userId: call.userId)
        for key in ["name", "username", "bio", "email"] where body.has(key) {
            if body.isNull(key) { throw Problem.invalidField(key, "must be a string") }
        }
        request.name = try body.optionalString("name")
        request.username = try body.optionalString("username")
        request.bio = try body.optionalString("bio")
        request.email = try body.optionalString("email")
        request.profilePhotoURL = try body.optionalString("profilePhotoURL")
        request.phone = try body.optionalString("phone")
        request.gender = try body.optionalString("gender")
        request.birthDate = try body.optionalString("birthDate")
        request.clear = clearable.sorted().filter { body.isNull($0) }
        if let name = request.name, name.count > 100 {
            throw Problem.invalidField("name", "must be at most 100 characters")
        }
        if let bio = request.bio, bio.count > 500 {
            throw Problem.invalidField("bio", "must be at most 500 characters")
        }
        if let url = request.profilePhotoURL, !Self.isHTTPURL(url) {
            throw Problem.invalidField(
                "profilePhotoURL", "must be an absolute http(s) URL", code: "invalid_url")
        }
        if let gender = request.gender, !FieldRules.genders.contains(gender) {
            throw Problem.invalidField(
                "gender", "must be female, male, custom or prefer_not_to_say", code: "invalid_gender")
        }
        if let date = request.birthDate, !FieldRules.isBirthDate(date) {
            throw Problem.invalidField(
                "birthDate", "must be a real date from 1900-01-01 to today, as YYYY-MM-DD", code: "invalid_birth_date")
        }
        return reply(200, Shapes.me(try await profile.call(Profile.UpdateMe.self, request)))
    }
}
