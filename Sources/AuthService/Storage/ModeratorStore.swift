import Messages
import Storage
import Wire

/// A moderator: the account and when the role was granted (Unix ms).
struct Moderator: Sendable, Equatable {
    var identity: Identity
    var grantedAt: Int64
}

/// The moderator role (`moderators`, `sessions.moderator`): every statement on them. The role is
/// the operator's to give, never the API's (`AuthService moderator grant|revoke|list`).
protocol ModeratorStore: Sendable {
    /// Makes the account named `username` (any case) a moderator from its next login; nothing
    /// changes when it is one already.
    /// - Parameter now: Unix ms.
    /// - Returns: the account, or nil when no account has that name.
    func grant(username: String, now: Int64) async throws -> Identity?

    /// Takes the role from the account named `username`: it is no moderator from now on, and its
    /// live sessions lose the role at once (the gateway asks AuthService on every moderation
    /// request).
    /// - Returns: the account and how many sessions lost the role, or nil when no account has
    ///   that name.
    func revoke(username: String) async throws -> (identity: Identity, sessions: Int)?

    /// Every moderator, by username.
    func moderators() async throws -> [Moderator]
}

/// `ModeratorStore` on a SQL `Database`, either engine.
struct SQLModeratorStore: ModeratorStore {
    let database: Database

    /// The account named `username`, looked up as login looks names up (lower-case).
    static func account(_ username: String, on c: DatabaseConnection) throws -> Identity? {
        guard let key = Username.lookupKey(username) else { return nil }
        return try c.queryOne(Identity.self, "SELECT \(SQLAccountStore.identityColumns) FROM users WHERE username = \(key)")
    }

    func grant(username: String, now: Int64) async throws -> Identity? {
        try await database.write { tx in
            guard let identity = try Self.account(username, on: tx.connection) else { return nil }
            try tx.query(
                """
                INSERT INTO moderators(user_id, granted_at) VALUES (\(identity.id), \(now))
                ON CONFLICT (user_id) DO NOTHING
                """)
            return identity
        }
    }

    func revoke(username: String) async throws -> (identity: Identity, sessions: Int)? {
        try await database.write { tx -> (identity: Identity, sessions: Int)? in
            guard let identity = try Self.account(username, on: tx.connection) else { return nil }
            try tx.query("DELETE FROM moderators WHERE user_id = \(identity.id)")
            try tx.query("UPDATE sessions SET moderator = 0 WHERE user_id = \(identity.id) AND moderator <> 0")
            return (identity, tx.connection.changes)
        }
    }

    func moderators() async throws -> [Moderator] {
        try await database.read { c in
            try c.query(
                """
                SELECT u.id, u.username, u.email, u.version, m.granted_at FROM moderators m JOIN users u ON u.id = m.user_id
                ORDER BY u.username
                """
            ).map { Moderator(identity: try Identity(row: $0), grantedAt: try $0.int64("granted_at")) }
        }
    }
}
