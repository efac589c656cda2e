import Messages
import Storage
import Wire

/// An account with its stored password hash.
struct StoredAccount: Sendable, RowDecodable {
    var identity: Identity
    /// libsodium's argon2id PHC string.
    var passwordHash: String
    /// `Auth.AccountState`'s raw value.
    var state: String

    init(row: Row) throws {
        identity = try Identity(row: row)
        passwordHash = try row.string("password_hash")
        state = try row.string("state")
    }
}

extension Identity: RowDecodable {
    /// Reads `id, username, email, version`.
    public init(row: Row) throws {
        self.init(
            id: try row.string("id"), username: try row.string("username"), email: try row.string("email"),
            version: try row.int64("version"))
    }
}

/// Accounts (`users`): every statement on that table.
protocol AccountStore: Sendable {
    /// Throws 409 when `email` or `username` (normalised; nil = not checked) belongs to another
    /// account than `excluding`: code `email_taken` or `username_taken` (the email's when both),
    /// with `fields` naming each taken field.
    func ensureAvailable(email: String?, username: String?, excluding: String?) async throws

    /// Creates the account and its first session, and emits `auth.user.registered`, in one
    /// transaction (uniqueness checked again inside it).
    /// - Throws: 409 as `ensureAvailable`, the engine's error.
    func register(_ identity: Identity, passwordHash: String, session: NewSession) async throws

    /// The account whose email is `email` and username is `username` if its registration is
    /// not finished and began at or after `since` (Unix ms), else nil.
    func pendingRegistration(email: String, username: String, since: Int64) async throws -> StoredAccount?

    /// Adds `session` to an account whose registration is still unfinished.
    /// - Returns: false (nothing written) when the registration was finished meanwhile.
    func resumeRegistration(userId: String, session: NewSession) async throws -> Bool

    /// Marks the account's registration finished; nothing when it already is, or is unknown.
    func completeRegistration(userId: String) async throws

    /// Creates the accounts among `users` (normalised, validated, no username or email twice)
    /// that do not exist yet, all with `passwordHash`, and emits one `auth.users.imported` with
    /// the new identities (none when nothing is new), in one transaction. A user whose username
    /// and email both belong to one existing account is that account (`created: false`).
    /// - Parameter createdAt: the new accounts' creation time, Unix ms.
    /// - Returns: each user's outcome, in order.
    /// - Throws: 409 `username_taken` / `email_taken` (the first conflict's code) with a field
    ///   `users[<index>].username` / `users[<index>].email` per conflict (at most
    ///   `Auth.ImportUsers.maxFieldErrors`), nothing written; the engine's error.
    func importUsers(_ users: [Auth.ImportUsers.User], passwordHash: String, createdAt: Int64) async throws
        -> [Auth.ImportUsers.Imported]

    /// The account whose username or email is `login` (already normalised), or nil.
    func account(login: String) async throws -> StoredAccount?

    /// Identities by id and by username (lower-case), each at most once, ids first; unknown
    /// ones, and accounts being deleted, left out.
    func identities(ids: [String], usernames: [String]) async throws -> [Identity]

    /// Sets a new username and/or email (nil = unchanged); when something changed, bumps the
    /// version and emits `auth.user.changed`, in one transaction.
    /// - Returns: the identity after the change, and whether it changed.
    /// - Throws: 404 `not_found`, 409 as `ensureAvailable`.
    func changeIdentity(userId: String, username: String?, email: String?) async throws -> (Identity, changed: Bool)
}

/// `AccountStore` on a SQL `Database`, either engine.
struct SQLAccountStore: AccountStore {
    let database: Database

    static let identityColumns: SQL = "id, username, email, version"

    func ensureAvailable(email: String?, username: String?, excluding: String?) async throws {
        try await database.read { try Self.ensureAvailable(email: email, username: username, excluding: excluding, $0) }
    }

    private static func ensureAvailable(
        email: String?, username: String?, excluding: String?, _ c: DatabaseConnection
    ) throws {
        var fields: [FieldError] = []
        let other = excluding ?? ""
        if let email, try c.exists("SELECT 1 FROM users WHERE email = \(email) AND id <> \(other)") {
            fields.append(FieldError(field: "email", .emailTaken, message: "this email is already registered"))
        }
        if let username, try c.exists("SELECT 1 FROM users WHERE username = \(username) AND id <> \(other)") {
            fields.append(FieldError(field: "username", .usernameTaken, message: "this username is taken"))
        }
        if let first = fields.first {
            throw ServiceError(
                code: first.code, message: fields.map(\.message).joined(separator: "; "), status: 409, fields: fields)
        }
    }

    func register(_ identity: Identity, passwordHash: String, session: NewSession) async throws {
        try await database.write { tx in
            let c = tx.connection
            try Self.ensureAvailable(email: identity.email, username: identity.username, excluding: nil, c)
            try c.query(
                """
                INSERT INTO users(id, username, email, password_hash, version, created_at, registration_pending_since)
                VALUES (\(identity.id), \(identity.username), \(identity.email), \(passwordHash), \(identity.version),
                    \(session.createdAt), \(session.createdAt))
                """)
            try SQLSessionStore.insert(session, in: tx)
            try tx.emit(Auth.UserRegistered(identity: identity))
        }
    }

    func pendingRegistration(email: String, username: String, since: Int64) async throws -> StoredAccount? {
        try await database.read { c in
            try c.queryOne(
                StoredAccount.self,
                """
                SELECT \(Self.identityColumns), password_hash, state FROM users
                WHERE email = \(email) AND username = \(username) AND registration_pending_since >= \(since)
                """)
        }
    }

    func resumeRegistration(userId: String, session: NewSession) async throws -> Bool {
        try await database.write { tx in
            guard
                try tx.connection.exists(
                    "SELECT 1 FROM users WHERE id = \(userId) AND registration_pending_since IS NOT NULL")
            else { return false }
            try SQLSessionStore.insert(session, in: tx)
            return true
        }
    }

    func completeRegistration(userId: String) async throws {
        try await database.write { tx -> Void in
            _ = try tx.connection.query(
                """
                UPDATE users SET registration_pending_since = NULL WHERE id = \(userId)
                    AND registration_pending_since IS NOT NULL
                """
            )
        }
    }

    func importUsers(_ users: [Auth.ImportUsers.User], passwordHash: String, createdAt: Int64) async throws
        -> [Auth.ImportUsers.Imported]
    {
        try await database.write { tx in
            let c = tx.connection
            var outcomes: [Auth.ImportUsers.Imported?] = Array(repeating: nil, count: users.count)
            var conflicts: [FieldError] = []
            // Every check before any insert: a conflict anywhere writes nothing.
            for (i, user) in users.enumerated() {
                if let holder = try c.queryOne("SELECT id, email FROM users WHERE username = \(user.username)") {
                    if try holder.string("email") == user.email {
                        outcomes[i] = .init(username: user.username, id: try holder.string("id"), created: false)
                        continue
                    }
                    conflicts.append(
                        FieldError(
                            field: "users[\(i)].username", .usernameTaken,
                            message: "this username belongs to an account with another email"))
                }
                if try c.exists("SELECT 1 FROM users WHERE email = \(user.email) AND username <> \(user.username)") {
                    conflicts.append(
                        FieldError(
                            field: "users[\(i)].email", .emailTaken,
                            message: "this email is registered to an account with another username"))
                }
            }
            if let first = conflicts.first {
                throw ServiceError(
                    code: first.code,
                    message: "\(conflicts.count) username(s) or email(s) belong to other accounts; first: \(first.field)",
                    status: 409, fields: Array(conflicts.prefix(Auth.ImportUsers.maxFieldErrors)))
            }
            var created: [Identity] = []
            for (i, user) in users.enumerated() where outcomes[i] == nil {
                let identity = Identity(id: RandomID.make(), username: user.username, email: user.email, version: 1)
                try c.query(
                    """
                    INSERT INTO users(id, username, email, password_hash, version, created_at)
                        VALUES (\(identity.id), \(identity.username), \(identity.email), \(passwordHash), 1, \(createdAt))
                    """
                )
                created.append(identity)
                outcomes[i] = .init(username: user.username, id: identity.id, created: true)
            }
            if !created.isEmpty { try tx.emit(Auth.UsersImported(identities: created)) }
            return outcomes.map { $0! }
        }
    }

    func account(login: String) async throws -> StoredAccount? {
        try await database.read { c in
            try c.queryOne(
                StoredAccount.self,
                "SELECT \(Self.identityColumns), password_hash, state FROM users WHERE username = \(login) OR email = \(login) LIMIT 1"
            )
        }
    }

    func identities(ids: [String], usernames: [String]) async throws -> [Identity] {
        let found = try await database.read { c -> [Identity] in
            var found: [Identity] = []
            for (column, values) in [("id" as SQL, ids), ("username", usernames)] where !values.isEmpty {
                found += try c.query(
                    Identity.self,
                    """
                    SELECT \(Self.identityColumns) FROM users WHERE \(column) IN (\(list: values))
                        AND state <> \(Auth.AccountState.deleting.rawValue)
                    """)
            }
            return found
        }
        var seen = Set<String>()
        return found.filter { seen.insert($0.id).inserted }
    }

    func changeIdentity(userId: String, username: String?, email: String?) async throws -> (Identity, changed: Bool) {
        try await database.write { tx -> (Identity, Bool) in
            let c = tx.connection
            guard
                let current = try c.queryOne(
                    Identity.self, "SELECT \(Self.identityColumns) FROM users WHERE id = \(userId)")
            else { throw ServiceError.notFound("user") }
            let newUsername = username ?? current.username
            let newEmail = email ?? current.email
            guard newUsername != current.username || newEmail != current.email else { return (current, false) }
            try Self.ensureAvailable(
                email: newEmail == current.email ? nil : newEmail,
                username: newUsername == current.username ? nil : newUsername, excluding: userId, c)
            let updated = Identity(id: userId, username: newUsername, email: newEmail, version: current.version + 1)
            try c.query(
                """
                UPDATE users SET username = \(updated.username), email = \(updated.email), version = \(updated.version)
                    WHERE id = \(userId)
                """
            )
            try tx.emit(Auth.IdentityChanged(identity: updated))
            return (updated, true)
        }
    }
}
