import Storage

/// AuthService's tables (migrations, oldest first).
///
/// - `users`: accounts: `id` (32 hex digits), lower-case unique `username` and `email`, the
///   argon2id PHC string, `version` (bumped on each identity change, for replicas), creation
///   time (Unix ms), and `registration_pending_since` (Unix ms) while its registration is not
///   finished (see `Auth.Register`); its `state` (`Auth.AccountState`), `state_version` and,
///   while it is being deleted, `deletion_started_at` (Unix ms).
/// - `sessions`: `token_hash` is the SHA-256 of the bearer token (the token itself is never
///   stored); expiry and revocation times in Unix ms. Expired and revoked rows are deleted by
///   `SessionPurge` (indexed on `expires_at` and `revoked_at`, so a purge reads only what it deletes).
/// - `login_failures`: failed login attempts for throttling: SHA-256 keys of the account (or of
///   the login identifier when no account matches) and of the client address, and the time.
/// - `moderators`: the accounts the operator made moderators (`AuthService moderator grant`;
///   `ModeratorStore`), with when (Unix ms); `sessions.moderator` is 1 for a session made while
///   its account was one (the role holds from the next login, and `revoke` clears it at once).
enum AuthSchema {
    /// The migrations from before they were named (`user_version` 1...3).
    static let legacy = [
        Migration.sqlite(
            "auth.1-accounts-sessions",
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
            """),
        Migration.sqlite("auth.2-sessions-by-expiry", "CREATE INDEX sessions_by_expiry ON sessions(expires_at)"),
        Migration.sqlite(
            "auth.3-sessions-revoked",
            "CREATE INDEX sessions_revoked ON sessions(revoked_at) WHERE revoked_at IS NOT NULL"),
    ]

    static let migrations =
        legacy + [
            // Throttling per (account, client address), per address and per account: the old
            // per-identifier rows cannot be split by address; they expire within the window anyway.
            Migration.sqlite(
                "auth.4-login-failures-by-address",
                """
                DROP TABLE login_failures;
                CREATE TABLE login_failures(
                    account_key TEXT NOT NULL, address_key TEXT NOT NULL, at INTEGER NOT NULL);
                CREATE INDEX login_failures_by_account ON login_failures(account_key, at);
                CREATE INDEX login_failures_by_address ON login_failures(address_key, at);
                CREATE INDEX login_failures_by_time ON login_failures(at);
                """),
            // When an account's registration began, until the gateway reports its profile made
            // (NULL: finished, and every account from before).
            Migration.sqlite("auth.5-registration-pending", "ALTER TABLE users ADD COLUMN registration_pending_since INTEGER"),
            // PostgreSQL starts from the schema auth.1...5 built on SQLite (times in Unix ms: BIGINT).
            Migration(
                "auth.6-postgres-schema", sqlite: nil,
                postgres: """
                    CREATE TABLE users(
                        id TEXT PRIMARY KEY,
                        username TEXT NOT NULL UNIQUE,
                        email TEXT NOT NULL UNIQUE,
                        password_hash TEXT NOT NULL,
                        version BIGINT NOT NULL,
                        created_at BIGINT NOT NULL,
                        registration_pending_since BIGINT);
                    CREATE TABLE sessions(
                        id TEXT PRIMARY KEY,
                        token_hash TEXT NOT NULL UNIQUE,
                        user_id TEXT NOT NULL REFERENCES users(id),
                        created_at BIGINT NOT NULL,
                        expires_at BIGINT NOT NULL,
                        revoked_at BIGINT);
                    CREATE INDEX sessions_by_user ON sessions(user_id);
                    CREATE INDEX sessions_by_expiry ON sessions(expires_at);
                    CREATE INDEX sessions_revoked ON sessions(revoked_at) WHERE revoked_at IS NOT NULL;
                    CREATE TABLE login_failures(account_key TEXT NOT NULL, address_key TEXT NOT NULL, at BIGINT NOT NULL);
                    CREATE INDEX login_failures_by_account ON login_failures(account_key, at);
                    CREATE INDEX login_failures_by_address ON login_failures(address_key, at);
                    CREATE INDEX login_failures_by_time ON login_failures(at);
                    """),
            // Account states (API.md "Account lifecycle and moderation"): `active`, `suspended`
            // or `deleting`, the state's version (one more per change, for the services that
            // copy it) and when a deletion began (Unix ms).
            Migration(
                "auth.7-account-states",
                """
                ALTER TABLE users ADD COLUMN state TEXT NOT NULL DEFAULT 'active';
                ALTER TABLE users ADD COLUMN state_version \(SQL.bigint) NOT NULL DEFAULT 0;
                ALTER TABLE users ADD COLUMN deletion_started_at \(SQL.bigint);
                CREATE INDEX users_deleting ON users(deletion_started_at) WHERE state = 'deleting';
                """),
            Migration(
                "auth.8-moderators",
                """
                CREATE TABLE moderators(
                    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
                    granted_at \(SQL.bigint) NOT NULL);
                ALTER TABLE sessions ADD COLUMN moderator \(SQL.bigint) NOT NULL DEFAULT 0;
                """),
        ]
}
