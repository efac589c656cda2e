import BackendKit
import Messages
import Wire

/// `auth.import_users`: many accounts in one transaction with one precomputed argon2id hash
/// (see `Auth.ImportUsers`); `auth.import_sessions`: a session for each of many accounts in one
/// transaction (see `Auth.ImportSessions`). Both only when the configuration allows imports
/// (`Imports`, `ALLOW_IMPORTS`). Registered on AuthService's RPC endpoint only; the gateway has
/// no route to either.
struct ImportHandlers: Sendable {
    let accounts: any AccountStore
    let sessions: any SessionStore
    /// Whether imports are served.
    let imports: Imports
    /// Session lifetime in ms (as a login's).
    let sessionTTLMs: Int64
    let clock: Clock

    func register(on host: ServiceHost) {
        host.on(Auth.ImportUsers.self) { request, context in try await importUsers(request, context) }
        host.on(Auth.ImportSessions.self) { request, context in try await importSessions(request, context) }
    }

    /// Checks that the service allows it, the batch's size and every id (32 lower-case hex
    /// digits, each at most once), then has the store start one session per account, in one
    /// transaction; each session is a login's (same lifetime, token and digest).
    /// - Throws: 403 `imports_disabled` unless imports are allowed, 400 `invalid_request` (field `userIds`),
    ///   400 with `userIds[<index>]` fields (`invalid_field`, or from the store `unknown_user`);
    ///   nothing is written on any error.
    func importSessions(_ request: Auth.ImportSessions.Request, _ context: RequestContext) async throws
        -> Auth.ImportSessions.Reply
    {
        try imports.check(Auth.ImportSessions.type)
        let limit = Auth.ImportSessions.maxUsers
        guard (1...limit).contains(request.userIds.count) else {
            let message = "1 to \(limit) user ids per request (got \(request.userIds.count))"
            throw ServiceError.badRequest(
                "invalid_request", message,
                fields: [FieldError(field: "userIds", .invalidRequest, message: message)])
        }
        var errors: [FieldError] = []
        var first: [String: Int] = [:]
        for (i, id) in request.userIds.enumerated() {
            if !Self.isAccountId(id) {
                errors.append(
                    FieldError(field: "userIds[\(i)]", .invalidField, message: "not an account id (32 lower-case hex digits)"))
            } else if let j = first[id] {
                errors.append(FieldError(field: "userIds[\(i)]", .invalidField, message: "the same id as userIds[\(j)]"))
            } else {
                first[id] = i
            }
        }
        if !errors.isEmpty {
            throw ServiceError(
                code: errors.count == 1 ? errors[0].code : "validation_failed",
                message: "\(errors.count) invalid field(s); first: \(errors[0].field): \(errors[0].message)", status: 400,
                fields: Array(errors.prefix(Auth.ImportSessions.maxFieldErrors)))
        }
        let now = clock.now()
        let made = request.userIds.map { SessionHandlers.newSession(userId: $0, now: now, ttlMs: sessionTTLMs) }
        let identities = try await sessions.importSessions(made.map(\.0))
        context.logger.info("auth.sessions_imported", metadata: ["sessions": "\(made.count)"])
        return .init(sessions: zip(identities, made).map { Auth.SessionReply(identity: $0, session: $1.1) })
    }

    /// Whether `id` has the shape of an account id (`RandomID`: 32 lower-case hex digits).
    static func isAccountId(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// Checks the batch's size, the hash (`PasswordHashPolicy`) and every username and email
    /// (`IdentityRules`, each at most once in the batch), then has the store create the new
    /// accounts.
    /// - Throws: 400 `invalid_request` (field `users`), 400 `invalid_password_hash` (field
    ///   `passwordHash`), 400 with `users[<index>].username` / `.email` fields, 409 from the
    ///   store; nothing is written on any error.
    func importUsers(_ request: Auth.ImportUsers.Request, _ context: RequestContext) async throws
        -> Auth.ImportUsers.Reply
    {
        try imports.check(Auth.ImportUsers.type)
        let limit = Auth.ImportUsers.maxUsers
        guard (1...limit).contains(request.users.count) else {
            let message = "1 to \(limit) users per request (got \(request.users.count))"
            throw ServiceError.badRequest(
                "invalid_request", message,
                fields: [FieldError(field: "users", .invalidRequest, message: message)])
        }
        if let problem = PasswordHashPolicy.problem(request.passwordHash) {
            throw ServiceError.badRequest(
                "invalid_password_hash", "passwordHash: \(problem)",
                fields: [FieldError(field: "passwordHash", .invalidPasswordHash, message: problem)])
        }
        var users: [Auth.ImportUsers.User] = []
        users.reserveCapacity(request.users.count)
        var errors: [FieldError] = []
        var firstWithUsername: [String: Int] = [:]
        var firstWithEmail: [String: Int] = [:]
        for (i, raw) in request.users.enumerated() {
            let (username, usernameError) = IdentityRules.username(raw.username)
            let (email, emailError) = IdentityRules.email(raw.email)
            if let e = usernameError {
                errors.append(FieldError(field: "users[\(i)].username", code: e.code, message: e.message))
            } else if let j = firstWithUsername[username] {
                errors.append(
                    FieldError(
                        field: "users[\(i)].username", .duplicateUsername,
                        message: "the same username as users[\(j)]"))
            } else {
                firstWithUsername[username] = i
            }
            if let e = emailError {
                errors.append(FieldError(field: "users[\(i)].email", code: e.code, message: e.message))
            } else if let j = firstWithEmail[email] {
                errors.append(
                    FieldError(field: "users[\(i)].email", .duplicateEmail, message: "the same email as users[\(j)]"))
            } else {
                firstWithEmail[email] = i
            }
            users.append(.init(username: username, email: email))
        }
        if !errors.isEmpty {
            // As `auth.register`: the field's own code when one field is wrong.
            throw ServiceError(
                code: errors.count == 1 ? errors[0].code : "validation_failed",
                message: "\(errors.count) invalid field(s); first: \(errors[0].field): \(errors[0].message)", status: 400,
                fields: Array(errors.prefix(Auth.ImportUsers.maxFieldErrors)))
        }
        let imported = try await accounts.importUsers(users, passwordHash: request.passwordHash, createdAt: clock.now())
        let created = imported.count { $0.created }
        context.logger.info(
            "auth.imported", metadata: ["users.created": "\(created)", "users.existing": "\(imported.count - created)"])
        return .init(users: imported)
    }
}
