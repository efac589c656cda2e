import Messages

/// Values the fake services answer with.
enum Fixtures {
    /// The public face of `username` (id `u-<username>`).
    static func user(_ username: String) -> PublicUser {
        PublicUser(id: "u-\(username)", username: username, name: username.capitalized, bio: "", profilePhotoURL: nil)
    }

    /// `username`'s own profile (id `u-<username>`).
    static func me(_ username: String, name: String = "") -> Me {
        Me(
            id: "u-\(username)", username: username, name: name, bio: "", profilePhotoURL: nil,
            email: "\(username)@example.com", phone: nil, gender: nil, birthDate: nil,
            joinDate: "2026-01-01T00:00:00.000Z")
    }

    /// `username`'s identity (id `u-<username>`).
    static func identity(_ username: String) -> Identity {
        Identity(id: "u-\(username)", username: username, email: "\(username)@example.com", version: 1)
    }
}

extension Fixtures {
    /// A post `id` by `owner`.
    static func post(_ id: String, by owner: String = "alice") -> Profile.Post {
        Profile.Post(
            id: id, owner: user(owner), postType: "photo", mediaURL: "https://img.example/\(id).jpg",
            thumbnailURL: "https://img.example/\(id)-t.jpg", caption: "", taggedUsers: [], likeCount: 0, commentCount: 0,
            likedByMe: false, createdAt: "2026-01-01T00:00:00.000Z")
    }
}
