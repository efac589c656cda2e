import Shared

extension AuthHandlers {
    /// `auth.register`: validates all fields (errors reported together), checks uniqueness,
    /// hashes the password, then in one transaction re-checks uniqueness, inserts the account and
    /// its first session and emits `Auth.UserRegistered`.
    func register(_ request: Auth.Register.Request, _ context: RequestContext) async throws
        -> Auth.SessionReply
    {
        let (email, emailError) = IdentityRules.email(request.email)
        let (username, usernameError) = IdentityRules.username(request.username)
        let errors = [emailError, usernameError, IdentityRules.password(request.password)].compactMap {
            $0
        }
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        // Cheap early answer before spending a hash; the transaction below re-checks.
        try await database.read { c in
            try UserQueries.ensureAvailable(email: email, username: username, excluding: nil, c)
        }
        let hash = try await hasher.hash(request.password, deadline: context.deadline)
        let identity = Identity(id: RandomID.make(), username: username, email: email, version: 1)
        let ttl = sessionTTLMs
        let session = try await database.write { tx in
            let c = tx.connection
            try UserQueries.ensureAvailable(email: email, username: username, excluding: nil, c)
            let now = Timestamp.nowMs()
            try c.query(
                "INSERT INTO users(id, username, email, password_hash, version, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                [identity.id, identity.username, identity.email, hash, identity.version, now])
            let session = try UserQueries.createSession(userId: identity.id, ttlMs: ttl, now: now, c)
            try tx.emit(Auth.UserRegistered(identity: identity))
            return session
        }
        logger.info("auth.registered", metadata: ["user.id": identity.id, "trace": context.trace])
        return Auth.SessionReply(identity: identity, session: session)
    }

    /// `auth.login`: by email or username, case-insensitive. Throttled per account, or per
    /// identifier when no account matches (see `LoginThrottle`); an unknown account is verified against a dummy hash, so it costs the same
    /// time and gets the same 401 `invalid_credentials` as a wrong password.
    func login(_ request: Auth.Login.Request, _ context: RequestContext) async throws
        -> Auth.SessionReply
    {
        guard request.password.utf8.count <= PasswordHasher.maxPasswordBytes else {
            throw ServiceError.validation([IdentityRules.tooLong])
        }
        let login = request.login.trimmingWhitespace().lowercased()
        let account = try await database.read { c in
            try c.queryOne(
                "SELECT \(UserQueries.identityColumns), password_hash FROM users WHERE username = ? OR email = ? LIMIT 1",
                [login, login]
            ).map { (identity: UserQueries.identity($0), hash: $0.string(4)) }
        }
        // Throttled per account when there is one, so that switching between its username and
        // its email does not double the guesses; per identifier otherwise (same reply either way).
        let key = account.map { LoginThrottle.accountKey($0.identity.id) } ?? LoginThrottle.key(login)
        let ttl = sessionTTLMs
        return try await throttle.attempt(key: key, failure: Self.invalidCredentials) {
            let matches = try await hasher.verify(
                request.password, against: account?.hash, deadline: context.deadline)
            guard matches, let account else {
                logger.info("auth.login_failed", metadata: ["trace": context.trace])
                throw Self.invalidCredentials
            }
            let session = try await database.write { tx in
                try LoginThrottle.clear(key: key, tx)
                return try UserQueries.createSession(
                    userId: account.identity.id, ttlMs: ttl, now: Timestamp.nowMs(), tx.connection)
            }
            logger.info(
                "auth.logged_in",
                metadata: [
                    "user.id": account.identity.id, "session.id": session.sessionId, "trace": context.trace,
                ])
            return Auth.SessionReply(identity: account.identity, session: session)
        }
    }

    /// `auth.lookup_users`: identities by id and by username (case-insensitive), unknown ones left
    /// out, each at most once, ids first. At most 1,000 of each are looked up.
    func lookupUsers(_ request: Auth.LookupUsers.Request) async throws -> Auth.LookupUsers.Reply {
        let ids = Array(request.ids.prefix(1_000))
        let usernames = request.usernames.prefix(1_000).map { $0.lowercased() }
        let users = try await database.read { c -> [Identity] in
            var found: [Identity] = []
            func fetch(_ column: String, _ values: [String]) throws {
                guard !values.isEmpty else { return }
                let marks = Array(repeating: "?", count: values.count).joined(separator: ",")
                let rows = try c.query(
                    "SELECT \(UserQueries.identityColumns) FROM users WHERE \(column) IN (\(marks))", values)
                found += rows.map { UserQueries.identity($0) }
            }
            try fetch("id", ids)
            try fetch("username", usernames)
            return found
        }
        var seen = Set<String>()
        return Auth.LookupUsers.Reply(users: users.filter { seen.insert($0.id).inserted })
    }

    /// `auth.change_identity`: new username and/or email (nil = unchanged), validated and
    /// unique; bumps `version` and emits `Auth.IdentityChanged` when something changed.
    /// Errors: 400 with `fields`, 404 `not_found`, 409 `email_taken` / `username_taken`.
    func changeIdentity(_ request: Auth.ChangeIdentity.Request) async throws -> Identity {
        let checkedUsername = request.username.map(IdentityRules.username)
        let checkedEmail = request.email.map(IdentityRules.email)
        let errors = [checkedUsername?.error, checkedEmail?.error].compactMap { $0 }
        let username = checkedUsername?.value
        let email = checkedEmail?.value
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        let userId = request.userId
        let (identity, changed) = try await database.write { tx -> (Identity, Bool) in
            let c = tx.connection
            guard let current = try UserQueries.identity(id: userId, c) else {
                throw ServiceError.notFound("user")
            }
            let newUsername = username ?? current.username
            let newEmail = email ?? current.email
            guard newUsername != current.username || newEmail != current.email else {
                return (current, false)
            }
            try UserQueries.ensureAvailable(
                email: newEmail == current.email ? nil : newEmail,
                username: newUsername == current.username ? nil : newUsername, excluding: userId, c)
            let updated = Identity(
                id: userId, username: newUsername, email: newEmail, version: current.version + 1)
            try c.query(
                "UPDATE users SET username = ?, email = ?, version = ? WHERE id = ?",
                [updated.username, updated.email, updated.version, userId])
            try tx.emit(Auth.IdentityChanged(identity: updated))
            return (updated, true)
        }
        if changed {
            logger.info(
                "auth.identity_changed", metadata: ["user.id": userId, "version": "\(identity.version)"])
        }
        return identity
    }
}
