import Messages
import Storage
import Wire

/// The compact integer keys NotificationService stores instead of ids: a user's is its
/// `identities.key` (the identity replica's row), a post's its `posts.key`.
enum Keys {
    /// The key of user `id`, adding a nameless identity row when the replica does not know the
    /// user yet (an event can arrive before the user's registration; the replica fills the name
    /// in when that comes, or on the first lookup). - Throws: the engine's error.
    static func user(_ id: String, in tx: Transaction) throws -> Int64 {
        if let key = try existingUser(id, on: tx.connection) { return key }
        // Another replica may add the same row meanwhile: its commit is waited for, then read.
        if let key = try tx.connection.scalar(
            "INSERT INTO identities(id, username, version) VALUES (\(id), NULL, 0) ON CONFLICT (id) DO NOTHING RETURNING key")
        {
            return key
        }
        guard let key = try existingUser(id, on: tx.connection) else { throw WriteConflict(reason: "identity \(id) raced") }
        return key
    }

    /// The key of user `id`, nil when this database has never seen it. An erased account's is its
    /// tombstone's (`account_states`: its `identities` row is gone, and none is added again).
    /// - Throws: the engine's error.
    static func existingUser(_ id: String, on c: DatabaseConnection) throws -> Int64? {
        try c.scalar(
            """
            SELECT COALESCE(
                (SELECT s.user_key FROM account_states s WHERE s.user_id = \(id) AND s.state = \(literal: AccountState.erased.rawValue)),
                (SELECT i.key FROM identities i WHERE i.id = \(id)))
            """)
    }

    /// The key of post `id`, adding the post or updating its thumbnail URL when one is given, and
    /// recording its `owner` (a user key) when given and not known yet (`posts.owner`: an
    /// account's hold and erasure find its posts' notifications through it).
    /// - Throws: the engine's error.
    static func post(_ id: String, thumbnailURL: String?, owner: Int64? = nil, in tx: Transaction) throws -> Int64 {
        if let row = try tx.connection.queryOne("SELECT key, thumbnail_url, owner FROM posts WHERE id = \(id)") {
            let key = try row.int64("key")
            if let thumbnailURL, try row.string("thumbnail_url") != thumbnailURL {
                try tx.query("UPDATE posts SET thumbnail_url = \(thumbnailURL) WHERE key = \(key)")
            }
            if let owner, try row.optionalInt64("owner") == nil {
                try tx.query("UPDATE posts SET owner = \(owner) WHERE key = \(key)")
            }
            return key
        }
        if let key = try tx.connection.scalar(
            """
            INSERT INTO posts(id, thumbnail_url, owner) VALUES (\(id), \(thumbnailURL ?? ""), \(owner))
            ON CONFLICT (id) DO NOTHING RETURNING key
            """)
        {
            return key
        }
        guard let key = try existingPost(id, on: tx.connection) else { throw WriteConflict(reason: "post \(id) raced") }
        return key
    }

    /// The key of post `id`, nil when no notification ever pointed to it. - Throws: the engine's error.
    static func existingPost(_ id: String, on c: DatabaseConnection) throws -> Int64? {
        try c.scalar("SELECT key FROM posts WHERE id = \(id)")
    }
}

/// Notification types as stored (`notifications.type`) and as the API names them.
enum NotificationType: Int64, CaseIterable, Sendable {
    case like = 1
    case follow = 2
    case comment = 3
    case tag = 4
    case post = 5
    case followRequest = 6
    case followAccepted = 7
    case reportResolved = 8

    /// The kind as the API names it.
    var kind: NotificationKind {
        switch self {
        case .like: .like
        case .follow: .follow
        case .comment: .comment
        case .tag: .tag
        case .post: .post
        case .followRequest: .followRequest
        case .followAccepted: .followAccepted
        case .reportResolved: .reportResolved
        }
    }

    /// The types never grouped (a group of one each on the groups page): stored with no `grp`,
    /// read through the `*_singles` indexes.
    static let singles: [NotificationType] = [.tag, .post, .followRequest, .followAccepted, .reportResolved]

    /// The stored type of `kind`, nil for a kind this build cannot store (`.unknown`).
    init?(kind: NotificationKind) {
        switch kind {
        case .like: self = .like
        case .follow: self = .follow
        case .comment: self = .comment
        case .tag: self = .tag
        case .post: self = .post
        case .followRequest: self = .followRequest
        case .followAccepted: self = .followAccepted
        case .reportResolved: self = .reportResolved
        case .unknown: return nil
        }
    }
}
