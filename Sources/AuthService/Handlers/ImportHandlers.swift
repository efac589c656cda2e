import Shared

/// `auth.import_users`: many accounts in one transaction with one precomputed argon2id hash
/// (see `Auth.ImportUsers`). Registered on AuthService's RPC endpoint only; the gateway has no
/// route to it.
struct ImportHandlers: Sendable {
    let accounts: any AccountStore
    let clock: Clock

    func register(on host: ServiceHost) {
        host.on(Auth.ImportUsers.self) { request, context in try await importUsers(request, context) }
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
