/// An account's identity as AuthService owns it; other services keep replicas of it.
public struct Identity: Codable, Sendable, Equatable {
    public var id: String
    /// Lower-case, 3–30 of `a-z 0-9 . _`.
    public var username: String
    public var email: String
    /// Increases with each change; a replica applies an update only if its version is newer.
    public var version: Int64
    public init(id: String, username: String, email: String, version: Int64) {
        self.id = id
        self.username = username
        self.email = email
        self.version = version
    }
}

/// The API's `PublicUser`: `{id, username, name, bio, profilePhotoURL}`.
public struct PublicUser: Codable, Sendable, Equatable {
    public var id: String
    public var username: String
    public var name: String
    public var bio: String
    public var profilePhotoURL: String?
    public init(id: String, username: String, name: String, bio: String, profilePhotoURL: String?) {
        self.id = id
        self.username = username
        self.name = name
        self.bio = bio
        self.profilePhotoURL = profilePhotoURL
    }
}

/// The API's `Me`: PublicUser plus the private fields, only ever about the caller.
public struct Me: Codable, Sendable, Equatable {
    public var id: String
    public var username: String
    public var name: String
    public var bio: String
    public var profilePhotoURL: String?
    public var email: String
    public var phone: String?
    /// `female`, `male`, `custom` or `prefer_not_to_say`, or nil.
    public var gender: String?
    /// `YYYY-MM-DD` or nil.
    public var birthDate: String?
    /// RFC 3339.
    public var joinDate: String
    public init(
        id: String, username: String, name: String, bio: String, profilePhotoURL: String?, email: String,
        phone: String?, gender: String?, birthDate: String?, joinDate: String
    ) {
        self.id = id
        self.username = username
        self.name = name
        self.bio = bio
        self.profilePhotoURL = profilePhotoURL
        self.email = email
        self.phone = phone
        self.gender = gender
        self.birthDate = birthDate
        self.joinDate = joinDate
    }
}

/// The caller's relation to a user: `following`, `not_following` or `self`.
public enum FollowState: String, Codable, Sendable {
    case following
    case notFollowing = "not_following"
    case `self` = "self"
}
