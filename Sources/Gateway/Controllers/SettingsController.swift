import Messages

/// Settings, the edit-profile form and profile changes (ProfileService).
struct SettingsController: Controller {
    let profile: any ServiceBackend

    /// `PATCH /v1/me/profile` fields that `null` clears.
    static let clearable: Set<String> = ["profilePhotoURL", "phone", "gender", "birthDate"]

    func register(_ routes: inout RouteCollection) {
        routes.add(.get, "/v1/settings") { request in
            try .json(
                SettingsShape(settings: try await profile.call(Profile.GetSettings.self, .init(userId: try request.userId))))
        }
        routes.add(.patch, "/v1/settings", body: .json) { request in
            let body = try request.decode(SettingsBody.self)
            let settings = try await profile.call(
                Profile.UpdateSettings.self, .init(userId: try request.userId, saveOriginalPosts: body.saveOriginalPosts))
            return try .json(SettingsShape(settings: settings))
        }
        routes.add(.get, "/v1/me/profile/edit") { request in
            try .json(try await profile.call(Profile.EditForm.self, .init(userId: try request.userId)))
        }
        routes.add(.patch, "/v1/me/profile", body: .json) { try await update($0) }
    }

    /// `PATCH /v1/me/profile` with any of `{name, username, bio, profilePhotoURL, email, phone,
    /// gender, birthDate}` → `Me`. `null` clears `profilePhotoURL`, `phone`, `gender`, `birthDate`.
    func update(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(ProfileChangeBody.self)
        var change = Profile.UpdateMe.Request(userId: try request.userId)
        change.name = body.name
        change.username = body.username
        change.bio = body.bio
        change.email = body.email
        change.profilePhotoURL = body.profilePhotoURL
        change.phone = body.phone
        change.gender = body.gender
        change.birthDate = body.birthDate
        change.isPrivate = body.isPrivate
        change.clear = body.clear
        return try .json(try await profile.call(Profile.UpdateMe.self, change))
    }

    /// `PATCH /v1/settings`'s body.
    struct SettingsBody: Decodable {
        var saveOriginalPosts: Bool
    }

    /// `PATCH /v1/me/profile`'s body: the members given change, `null` clears one of
    /// `clearable` and is refused for the others (they cannot be cleared).
    struct ProfileChangeBody: Decodable {
        var name: String?
        var username: String?
        var bio: String?
        var email: String?
        var profilePhotoURL: String?
        var phone: String?
        var gender: String?
        var birthDate: String?
        /// `private`: a private account or not (API.md "Privacy and safety").
        var isPrivate: Bool?
        /// The members given as `null`, each one of `clearable`, in the order of their names.
        var clear: [String]

        enum CodingKeys: String, CodingKey {
            case name, username, bio, email, profilePhotoURL, phone, gender, birthDate
            case isPrivate = "private"
        }

        /// - Throws: 400 `unknown_field`; 400 `invalid_field` for `null` given to a member that
        ///   cannot be cleared (before any other member is read), or a member that is not a string.
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            for key in [CodingKeys.name, .username, .bio, .email, .isPrivate] where c.contains(key) {
                if try c.decodeNil(forKey: key) {
                    throw Problem.invalidField(key.stringValue, "must be a string (it cannot be cleared)")
                }
            }
            name = try c.decodeIfPresent(String.self, forKey: .name)
            username = try c.decodeIfPresent(String.self, forKey: .username)
            bio = try c.decodeIfPresent(String.self, forKey: .bio)
            email = try c.decodeIfPresent(String.self, forKey: .email)
            profilePhotoURL = try c.decodeIfPresent(String.self, forKey: .profilePhotoURL)
            phone = try c.decodeIfPresent(String.self, forKey: .phone)
            gender = try c.decodeIfPresent(String.self, forKey: .gender)
            birthDate = try c.decodeIfPresent(String.self, forKey: .birthDate)
            isPrivate = try c.decodeIfPresent(Bool.self, forKey: .isPrivate)
            clear = try SettingsController.clearable.sorted().filter { name in
                guard let key = CodingKeys(stringValue: name), c.contains(key) else { return false }
                return try c.decodeNil(forKey: key)
            }
        }
    }
}
