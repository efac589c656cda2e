import Messages
import Storage
import Wire

/// A session about to be stored: its id, the SHA-256 of its token (hex) and its times (Unix ms).
struct NewSession: Sendable {
    var id: String
    var tokenDigest: String
    var userId: String
    var createdAt: Int64
    var expiresAt: Int64
}

/// Sessions (`sessions`): every statement on that table.
protocol SessionStore: Sendable {
    /// Stores a session for a successful login and deletes the login failures that `clearing`
    /// names, in one transaction.
    func start(_ session: NewSession, clearing failures: LoginFailureKey) async throws

    /// Stores `sessions` (each for an existing account) in one transaction, after checking that
    /// every account exists (`auth.import_sessions`).
    /// - Returns: each session's account, in order.
    /// - Throws: 400 with fields `userIds[<index>]` `unknown_user` (index into `sessions`, at
    ///   most `Auth.ImportSessions.maxFieldErrors` of them) when an account does not exist;
    ///   nothing is written then.
    func importSessions(_ sessions: [NewSession]) async throws -> [Identity]

    /// The live session (not expired at `now`, not revoked, its account active) whose token
    /// hashes to `tokenDigest`.
    func validate(tokenDigest: String, now: Int64) async throws -> Auth.Validate.Reply?

    /// Revokes the live session whose token hashes to `tokenDigest`, or with `allSessions` every
    /// live session of its user, and emits `auth.session.revoked` naming them, in one transaction.
    /// - Returns: nil when the token is not a live session.
    func revoke(tokenDigest: String, allSessions: Bool, now: Int64) async throws -> Auth.Logout.Reply?

    /// Deletes up to `limit` sessions expired or revoked at `now`. - Returns: how many.
    func purge(now: Int64, limit: Int) async throws -> Int
}

/// `SessionStore` on a SQL `Database`, either engine.
struct SQLSessionStore: SessionStore {
    let database: Database

    /// Inserts a session in `tx` (also used by registration), a moderator's when its account is
    /// one now (`moderators`).
    static func insert(_ s: NewSession, in tx: Transaction) throws {
        try tx.query(
            """
            INSERT INTO sessions(id, token_hash, user_id, created_at, expires_at, moderator)
                VALUES (\(s.id), \(s.tokenDigest), \(s.userId), \(s.createdAt), \(s.expiresAt),
                    (SELECT COUNT(*) FROM moderators WHERE user_id = \(s.userId)))
            """
        )
    }

    func start(_ session: NewSession, clearing failures: LoginFailureKey) async throws {
        try await database.write { tx in
            try SQLLoginFailureStore.clear(failures, in: tx)
            try Self.insert(session, in: tx)
        }
    }

    func importSessions(_ sessions: [NewSession]) async throws -> [Identity] {
        try await database.write { tx -> [Identity] in
            var byId: [String: Identity] = [:]
            byId.reserveCapacity(sessions.count)
            // Every account looked up before any insert (in chunks: a statement's parameters
            // are bounded on both engines), so an unknown one writes nothing.
            var rest = sessions[...]
            while !rest.isEmpty {
                let chunk = rest.prefix(500)
                rest = rest.dropFirst(chunk.count)
                for identity in try tx.connection.query(
                    Identity.self,
                    """
                    SELECT \(SQLAccountStore.identityColumns) FROM users WHERE id IN (\(list: chunk.map(\.userId)))
                        AND state = \(Auth.AccountState.active.rawValue)
                    """)
                {
                    byId[identity.id] = identity
                }
            }
            let unknown = sessions.indices.filter { byId[sessions[$0].userId] == nil }
            if let first = unknown.first {
                let fields = unknown.prefix(Auth.ImportSessions.maxFieldErrors).map {
                    FieldError(field: "userIds[\($0)]", .unknownUser, message: "no account has this id")
                }
                throw ServiceError(
                    code: unknown.count == 1 ? "unknown_user" : "validation_failed",
                    message: "\(unknown.count) unknown account(s); first: userIds[\(first)]", status: 400, fields: fields)
            }
            for session in sessions { try Self.insert(session, in: tx) }
            return sessions.map { byId[$0.userId]! }
        }
    }

    func validate(tokenDigest: String, now: Int64) async throws -> Auth.Validate.Reply? {
        let row = try await database.read { c in
            try c.queryOne(
                """
                SELECT s.id AS session_id, s.user_id, s.expires_at, s.moderator, u.username
                FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.token_hash = \(tokenDigest) AND s.revoked_at IS NULL AND s.expires_at > \(now)
                    AND u.state = \(Auth.AccountState.active.rawValue)
                """)
        }
        guard let row else { return nil }
        return Auth.Validate.Reply(
            userId: try row.string("user_id"), sessionId: try row.string("session_id"),
            username: try row.string("username"), expiresAt: Timestamp.format(ms: try row.int64("expires_at")),
            moderator: try row.bool("moderator"))
    }

    func revoke(tokenDigest: String, allSessions: Bool, now: Int64) async throws -> Auth.Logout.Reply? {
        try await database.write { tx -> Auth.Logout.Reply? in
            guard
                let session = try tx.connection.queryOne(
                    """
                    SELECT id, user_id, expires_at FROM sessions WHERE token_hash = \(tokenDigest) AND revoked_at IS NULL
                        AND expires_at > \(now)
                    """
                )
            else { return nil }
            let userId = try session.string("user_id")
            let ids: [String]
            let expiresAt: Int64
            if allSessions {
                let rows = try tx.query(
                    """
                    SELECT id, expires_at FROM sessions WHERE user_id = \(userId) AND revoked_at IS NULL
                        AND expires_at > \(now) ORDER BY created_at, id
                    """
                )
                ids = try rows.map { try $0.string("id") }
                expiresAt = try rows.map { try $0.int64("expires_at") }.max() ?? now
                try tx.query(
                    """
                    UPDATE sessions SET revoked_at = \(now) WHERE user_id = \(userId) AND revoked_at IS NULL
                        AND expires_at > \(now)
                    """
                )
            } else {
                ids = [try session.string("id")]
                expiresAt = try session.int64("expires_at")
                try tx.query("UPDATE sessions SET revoked_at = \(now) WHERE id = \(ids[0])")
            }
            try tx.emit(Auth.SessionRevoked(userId: userId, sessionIds: ids, expiresAt: Timestamp.format(ms: expiresAt)))
            return Auth.Logout.Reply(userId: userId, revokedSessionIds: ids)
        }
    }

    func purge(now: Int64, limit: Int) async throws -> Int {
        // Two statements, each served by its own index (an OR of the two made SQLite scan).
        try await database.write { tx -> Int in
            try tx.query(
                "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE expires_at <= \(now) LIMIT \(limit))")
            let expired = tx.connection.changes
            try tx.query(
                "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE revoked_at IS NOT NULL LIMIT \(limit - expired))"
            )
            return expired + tx.connection.changes
        }
    }
}
