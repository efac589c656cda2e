import Shared

/// SQL for accounts and sessions, run inside `Database.read` / `Database.write` closures.
enum UserQueries {
    static let identityColumns = "id, username, email, version"

    /// Decodes `id, username, email, version` starting at column `from`.
    static func identity(_ row: Row, from i: Int = 0) -> Identity {
        Identity(
            id: row.string(i), username: row.string(i + 1), email: row.string(i + 2),
            version: row.int(i + 3))
    }

    /// The account with this id, or nil.
    static func identity(id: String, _ c: SQLiteConnection) throws -> Identity? {
        try c.queryOne("SELECT \(identityColumns) FROM users WHERE id = ?", [id]).map { identity($0) }
    }

    /// Throws 409 when `email` or `username` (already normalised; nil = not checked) belongs to
    /// another account than `excluding`. Code `email_taken` or `username_taken` (the email's when
    /// both), with `fields` naming every taken field.
    static func ensureAvailable(
        email: String?, username: String?, excluding: String?, _ c: SQLiteConnection
    ) throws {
        var fields: [FieldError] = []
        let other = excluding ?? ""
        if let email,
            try c.queryOne("SELECT 1 FROM users WHERE email = ? AND id <> ?", [email, other]) != nil
        {
            fields.append(
                FieldError(field: "email", code: "email_taken", message: "this email is already registered")
            )
        }
        if let username,
            try c.queryOne("SELECT 1 FROM users WHERE username = ? AND id <> ?", [username, other]) != nil
        {
            fields.append(
                FieldError(field: "username", code: "username_taken", message: "this username is taken"))
        }
        if let first = fields.first {
            throw ServiceError(
                code: first.code, message: fields.map(\.message).joined(separator: "; "), status: 409,
                fields: fields)
        }
    }

    /// Inserts a session and returns its reply shape (the token is only ever returned, never stored).
    static func createSession(userId: String, ttlMs: Int64, now: Int64, _ c: SQLiteConnection) throws
        -> Auth.Session
    {
        let token = SessionToken.make()
        let id = RandomID.make()
        let expires = now + ttlMs
        try c.query(
            "INSERT INTO sessions(id, token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            [id, SessionToken.digest(token), userId, now, expires])
        return Auth.Session(token: token, sessionId: id, expiresAt: Timestamp.format(ms: expires))
    }
}
