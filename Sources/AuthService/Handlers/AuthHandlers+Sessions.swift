import Shared

extension AuthHandlers {
    /// `auth.validate`: the session behind a bearer token. 401 `invalid_token` when the token is
    /// unknown, expired or revoked.
    func validate(_ request: Auth.Validate.Request) async throws -> Auth.Validate.Reply {
        guard request.token.utf8.count <= SessionToken.maxLength else { throw Self.invalidToken }
        let digest = SessionToken.digest(request.token)
        let now = Timestamp.nowMs()
        let row = try await database.read { c in
            try c.queryOne(
                """
                SELECT s.id, s.user_id, s.expires_at, u.username FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.token_hash = ? AND s.revoked_at IS NULL AND s.expires_at > ?
                """, [digest, now])
        }
        guard let row else { throw Self.invalidToken }
        return Auth.Validate.Reply(
            userId: row.string(1), sessionId: row.string(0), username: row.string(3),
            expiresAt: Timestamp.format(ms: row.int(2)))
    }

    /// `auth.logout`: revokes the token's session, or with `allSessions` every live session of
    /// its user, and emits `Auth.SessionRevoked` naming them. 401 `invalid_token` when the token
    /// is not a live session.
    func logout(_ request: Auth.Logout.Request) async throws -> Auth.Logout.Reply {
        guard request.token.utf8.count <= SessionToken.maxLength else { throw Self.invalidToken }
        let digest = SessionToken.digest(request.token)
        let all = request.allSessions
        let reply = try await database.write { tx -> Auth.Logout.Reply in
            let now = Timestamp.nowMs()
            guard
                let session = try tx.query(
                    "SELECT id, user_id FROM sessions WHERE token_hash = ? AND revoked_at IS NULL AND expires_at > ?",
                    [digest, now]
                ).first
            else { throw Self.invalidToken }
            let userId = session.string(1)
            let ids: [String]
            if all {
                ids = try tx.query(
                    "SELECT id FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at, id",
                    [userId, now]
                ).map { $0.string(0) }
                try tx.query(
                    "UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?",
                    [now, userId, now])
            } else {
                ids = [session.string(0)]
                try tx.query("UPDATE sessions SET revoked_at = ? WHERE id = ?", [now, ids[0]])
            }
            try tx.emit(Auth.SessionRevoked(userId: userId, sessionIds: ids))
            return Auth.Logout.Reply(userId: userId, revokedSessionIds: ids)
        }
        logger.info(
            "auth.logged_out",
            metadata: ["user.id": reply.userId, "sessions": "\(reply.revokedSessionIds.count)"])
        return reply
    }
}
