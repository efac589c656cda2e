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

/// Usernames as lookups see them: AuthService keeps them lower-case, 3–30 of `a-z 0-9 . _`,
/// and a name typed by a client matches one only when the typed text itself is in that
/// alphabet, any case: no other character folds into it (the Kelvin sign U+212A lower-cases
/// to `k`, a fullwidth `ａ` is not `a`).
public enum Username {
    /// The lower-cased lookup key for `typed`, or nil when it cannot name any account.
    public static func lookupKey(_ typed: String) -> String? {
        let bytes = Array(typed.utf8)
        guard (1...64).contains(bytes.count),
            bytes.allSatisfy({
                (0x61...0x7a).contains($0) || (0x41...0x5a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2e || $0 == 0x5f
            })
        else { return nil }
        return String(decoding: bytes.map { (0x41...0x5a).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}

/// The API's `PublicUser`: `{id, username, name, bio, profilePhotoURL, private}`.
public struct PublicUser: Codable, Sendable, Equatable {
    public var id: String
    public var username: String
    public var name: String
    public var bio: String
    public var profilePhotoURL: String?
    /// A private account (API.md "Privacy and safety"): its posts and lists only for the owner
    /// and accepted followers. JSON `private`; false when a peer older than it left it out.
    public var isPrivate: Bool
    public init(
        id: String, username: String, name: String, bio: String, profilePhotoURL: String?, isPrivate: Bool = false
    ) {
        self.id = id
        self.username = username
        self.name = name
        self.bio = bio
        self.profilePhotoURL = profilePhotoURL
        self.isPrivate = isPrivate
    }

    enum CodingKeys: String, CodingKey {
        case id, username, name, bio, profilePhotoURL
        case isPrivate = "private"
    }

    /// Decodes the JSON above, `private` false when absent. - Throws: `DecodingError`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        username = try c.decode(String.self, forKey: .username)
        name = try c.decode(String.self, forKey: .name)
        bio = try c.decode(String.self, forKey: .bio)
        profilePhotoURL = try c.decodeIfPresent(String.self, forKey: .profilePhotoURL)
        isPrivate = try c.decodeIfPresent(Bool.self, forKey: .isPrivate) ?? false
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
    /// As `PublicUser.isPrivate` (JSON `private`).
    public var isPrivate: Bool
    public init(
        id: String, username: String, name: String, bio: String, profilePhotoURL: String?, email: String,
        phone: String?, gender: String?, birthDate: String?, joinDate: String, isPrivate: Bool = false
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
        self.isPrivate = isPrivate
    }

    enum CodingKeys: String, CodingKey {
        case id, username, name, bio, profilePhotoURL, email, phone, gender, birthDate, joinDate
        case isPrivate = "private"
    }

    /// Decodes the JSON, `private` false when absent. - Throws: `DecodingError`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        username = try c.decode(String.self, forKey: .username)
        name = try c.decode(String.self, forKey: .name)
        bio = try c.decode(String.self, forKey: .bio)
        profilePhotoURL = try c.decodeIfPresent(String.self, forKey: .profilePhotoURL)
        email = try c.decode(String.self, forKey: .email)
        phone = try c.decodeIfPresent(String.self, forKey: .phone)
        gender = try c.decodeIfPresent(String.self, forKey: .gender)
        birthDate = try c.decodeIfPresent(String.self, forKey: .birthDate)
        joinDate = try c.decode(String.self, forKey: .joinDate)
        isPrivate = try c.decodeIfPresent(Bool.self, forKey: .isPrivate) ?? false
    }
}

/// The caller's relation to a user: `following`, `requested` (a follow request to a private
/// account is pending), `not_following` or `self`.
public enum FollowState: String, Codable, Sendable {
    case following
    case requested
    case notFollowing = "not_following"
    case `self` = "self"
}
