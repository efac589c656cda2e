import Messages

/// Settings, the edit-profile form and profile changes (ProfileService).
struct SettingsController: Controller {
    let profile: Backend

    /// `PATCH /v1/me/profile` fields that `null` clears.
    static let clearable: Set<String> = ["profilePhotoURL", "phone", "gender", "birthDate"]

    func register(_ routes: inout RouteCollection) {
        routes.add("GET", "/v1/settings") { request in
            try .json(
                SettingsShape(settings: try await profile.call(Profile.GetSettings.self, .init(userId: try request.userId))))
        }
        routes.add("PATCH", "/v1/settings", json: true) { request in
            let body = try request.body()
            try body.allowOnly(["saveOriginalPosts"])
            let settings = try await profile.call(
                Profile.UpdateSettings.self,
                .init(userId: try request.userId, saveOriginalPosts: try body.bool("saveOriginalPosts")))
            return try .json(SettingsShape(settings: settings))
        }
        routes.add("GET", "/v1/me/profile/edit") { request in
            try .json(try await profile.call(Profile.EditForm.self, .init(userId: try request.userId)))
        }
        routes.add("PATCH", "/v1/me/profile", json: true) { try await update($0) }
    }

    /// `PATCH /v1/me/profile` with any of `{name, username, bio, profilePhotoURL, email, phone,
    /// gender, birthDate}` → `Me`. `null` clears `profilePhotoURL`, `phone`, `gender`, `birthDate`.
    func update(_ request: Request) async throws -> HTTPResponse {
        let body = try request.body()
        try body.allowOnly(Self.clearable.union(["name", "username", "bio", "email"]))
        for key in ["name", "username", "bio", "email"] where body.isNull(key) {
            throw Problem.invalidField(key, "must be a string (it cannot be cleared)")
        }
        var change = Profile.UpdateMe.Request(userId: try request.userId)
        change.name = try body.optionalString("name")
        change.username = try body.optionalString("username")
        change.bio = try body.optionalString("bio")
        change.email = try body.optionalString("email")
        change.profilePhotoURL = try body.optionalString("profilePhotoURL")
        change.phone = try body.optionalString("phone")
        change.gender = try body.optionalString("gender")
        change.birthDate = try body.optionalString("birthDate")
        change.clear = Self.clearable.sorted().filter { body.isNull($0) }
        return try .json(try await profile.call(Profile.UpdateMe.self, change))
    }
}
