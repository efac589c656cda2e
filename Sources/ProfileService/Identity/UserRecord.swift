import Shared

/// One row of `users`: the identity replica plus the profile fields ProfileService owns.
struct UserRecord: Sendable, Equatable {
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

    /// The columns `init(row:)` reads, in order.
    static let columns =
        "id, username, email, version, name, bio, photo_url, phone, gender, birth_date, join_date, save_original_posts"

    init(row: Row) {
        id = row.string(0)
        username = row.string(1)
        email = row.string(2)
        version = row.int(3)
        name = row.string(4)
        bio = row.string(5)
        profilePhotoURL = row.optionalString(6)
        phone = row.optionalString(7)
        gender = row.optionalString(8)
        birthDate = row.optionalString(9)
        joinDate = row.string(10)
        saveOriginalPosts = row.bool(11)
    }

    /// The API's `PublicUser`.
    var publicUser: PublicUser {
        PublicUser(id: id, username: username, name: name, bio: bio, profilePhotoURL: profilePhotoURL)
    }

    /// The API's `Me` (only ever for the caller).
    var me: Me {
        Me(
            id: id, username: username, name: name, bio: bio, profilePhotoURL: profilePhotoURL,
            email: email, phone: phone,
            gender: gender, birthDate: birthDate, joinDate: joinDate)
    }
}

/// Reads and writes `users` rows inside one connection or transaction.
enum UserRows {
    /// The user with `id`, or nil.
    static func byId(_ id: String, _ conn: SQLiteConnection) throws -> UserRecord? {
        try conn.queryOne("SELECT \(UserRecord.columns) FROM users WHERE id = ?", [id]).map(
            UserRecord.init(row:))
    }

    /// Every replica row holding `username` (normally at most one; more only while a rename
    /// is still on its way, see `UserDirectory`).
    static func byUsername(_ username: String, _ conn: SQLiteConnection) throws -> [UserRecord] {
        try conn.query("SELECT \(UserRecord.columns) FROM users WHERE username = ?", [username]).map(
            UserRecord.init(row:))
    }

    /// Public users by id, in no particular order (unknown ids left out).
    static func publicUsers(ids: [String], _ conn: SQLiteConnection) throws -> [String: PublicUser] {
        var result: [String: PublicUser] = [:]
        for id in Set(ids) {
            if let u = try byId(id, conn) { result[id] = u.publicUser }
        }
        return result
    }

    /// Applies an identity from AuthService if it is newer than the replica's (or new).
    /// - Returns: true when the row changed.
    @discardableResult
    static func apply(_ identity: Identity, _ tx: Transaction) throws -> Bool {
        try tx.query(
            """
            INSERT INTO users(id, username, email, version, join_date) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET username = excluded.username, email = excluded.email, version = excluded.version
            WHERE excluded.version > users.version
            """, [identity.id, identity.username, identity.email, identity.version, Timestamp.now()])
        return tx.connection.changes > 0
    }
}
