import Messages
import Storage

/// An account as ProfileService knows it: the replicated identity and the profile fields.
struct UserRecord: Sendable, Equatable, RowDecodable {
    var id: String
    var username: String
    var email: String
    var version: Int64
    var name: String
    var bio: String
    var profilePhotoURL: String?
    var phone: String?
    var gender: String?
    /// `YYYY-MM-DD`.
    var birthDate: String?
    /// RFC 3339.
    var joinDate: String
    var saveOriginalPosts: Bool
    /// A private account (API.md "Privacy and safety").
    var isPrivate: Bool

    /// The columns `init(row:)` reads, from `identities i JOIN profiles p`.
    static let select: SQL = """
        SELECT i.id, i.username, i.email, i.version, p.name, p.bio, p.photo_url, p.phone, p.gender,
            p.birth_date, p.join_date, p.save_original_posts, p.is_private
        FROM identities i JOIN profiles p ON p.id = i.id
        """

    init(row: Row) throws {
        id = try row.string("id")
        username = try row.string("username")
        email = try row.optionalString("email") ?? ""
        version = try row.int64("version")
        name = try row.string("name")
        bio = try row.string("bio")
        profilePhotoURL = try row.optionalString("photo_url")
        phone = try row.optionalString("phone")
        gender = try row.optionalString("gender")
        birthDate = try row.optionalString("birth_date")
        joinDate = try row.string("join_date")
        saveOriginalPosts = try row.bool("save_original_posts")
        isPrivate = try row.bool("is_private")
    }

    /// The API's `PublicUser`.
    var publicUser: PublicUser {
        PublicUser(id: id, username: username, name: name, bio: bio, profilePhotoURL: profilePhotoURL, isPrivate: isPrivate)
    }

    /// The API's `Me` (only ever for the caller).
    var me: Me {
        Me(
            id: id, username: username, name: name, bio: bio, profilePhotoURL: profilePhotoURL, email: email,
            phone: phone, gender: gender, birthDate: birthDate, joinDate: joinDate, isPrivate: isPrivate)
    }
}
