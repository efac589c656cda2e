/// AuthService's tables, applied in order by `PRAGMA user_version`.
///
/// - `users`: one row per account; `username` and `email` are stored normalised (lower-case),
///   so their UNIQUE constraints are case-insensitive. `password_hash` is an argon2id PHC string.
/// - `sessions`: `token_hash` is the hex SHA-256 of the bearer token (never the token);
///   times are Unix ms; `revoked_at` is set on logout. Expired and revoked sessions are deleted
///   by `SessionPurge` (migrations 2 and 3 index `expires_at` and `revoked_at` for it, so a
///   purge reads only the rows it deletes).
/// - `login_failures`: failed (or in-progress) login attempts per login identifier, stored as
///   a SHA-256 digest; used for throttling and pruned past the window.
enum AuthSchema {
    static let migrations = [
        """
        CREATE TABLE users(
            id TEXT PRIMARY KEY,
            username TEXT NOT NULL UNIQUE,
            email TEXT NOT NULL UNIQUE,
            password_hash TEXT NOT NULL,
            version INTEGER NOT NULL,
            created_at INTEGER NOT NULL);
        CREATE TABLE sessions(
            id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL REFERENCES users(id),
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            revoked_at INTEGER);
        CREATE INDEX sessions_by_user ON sessions(user_id);
        CREATE TABLE login_failures(login TEXT NOT NULL, at INTEGER NOT NULL);
        CREATE INDEX login_failures_by_login ON login_failures(login, at);
        CREATE INDEX login_failures_by_time ON login_failures(at);
        """,
        "CREATE INDEX sessions_by_expiry ON sessions(expires_at)",
        "CREATE INDEX sessions_revoked ON sessions(revoked_at) WHERE revoked_at IS NOT NULL",
    ]
}
