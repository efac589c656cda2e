import BackendKit
import Messages
import Wire

/// `auth.login`, `auth.logout`, `auth.validate`.
struct SessionHandlers: Sendable {
    let accounts: any AccountStore
    let sessions: any SessionStore
    let hasher: PasswordHasher
    let throttle: LoginThrottle
    /// Session lifetime in ms.
    let sessionTTLMs: Int64
    let clock: Clock

    static let invalidToken = ServiceError.unauthorized(.invalidToken, "the token is unknown, expired or revoked")
    static let invalidCredentials = ServiceError.unauthorized(.invalidCredentials, "wrong login or password")
    static let accountSuspended = ServiceError(
        .accountSuspended, message: "this account is suspended for violating the community guidelines", status: 403)

    func register(on host: ServiceHost) {
        host.on(Auth.Login.self) { request, context in try await login(request, context) }
        host.on(Auth.Logout.self) { request, context in try await logout(request, context) }
        host.on(Auth.Validate.self) { request, _ in try await validate(request) }
    }

    /// A new session for `userId`: what is stored (the token's digest) and what is answered
    /// (the token, shown once).
    static func newSession(userId: String, now: Int64, ttlMs: Int64) -> (NewSession, Auth.Session) {
        let token = SessionToken.make()
        let stored = NewSession(
            id: RandomID.make(), tokenDigest: SessionToken.digest(token), userId: userId, createdAt: now,
            expiresAt: now + ttlMs)
        return (stored, Auth.Session(token: token, sessionId: stored.id, expiresAt: Timestamp.format(ms: stored.expiresAt)))
    }

    /// Logs in by email or username, case-insensitive, throttled per account and client address
    /// (see `LoginThrottle`). An unknown account is verified against a dummy hash, so it costs
    /// the same time and gets the same 401 `invalid_credentials` as a wrong password.
    /// An account being deleted is as unknown (401); a suspended one, with the right password,
    /// is 403 `account_suspended`.
    /// - Throws: 400 `password_too_long`, 401, 403, 429 `too_many_attempts`, 503 `busy`.
    func login(_ request: Auth.Login.Request, _ context: RequestContext) async throws -> Auth.SessionReply {
        guard request.password.utf8.count <= PasswordHasher.maxPasswordBytes else {
            throw ServiceError.identityValidation([IdentityRules.tooLong])
        }
        let typed = request.login.trimmingWhitespace()
        let login = typed.contains("@") ? IdentityRules.normalizedEmail(typed) : typed.lowercased()
        // An email (it has an `@`) is normalised as registration normalises it; anything else can
        // only be a username, which matches only when typed in the username alphabet itself
        // ("\u{212A}elvin" lower-cases to "kelvin" but is not that username).
        // An account being deleted answers as no account would (API.md: login is 401 at once).
        let account =
            typed.contains("@") || IdentityRules.username(typed).error == nil
            ? try await accounts.account(login: login).flatMap { $0.state == Auth.AccountState.deleting.rawValue ? nil : $0 }
            : nil
        let key = LoginThrottle.key(
            accountId: account?.identity.id, login: login, clientAddress: request.clientAddress)
        return try await throttle.attempt(key, failure: Self.invalidCredentials) {
            let matches = try await hasher.verify(request.password, against: account?.passwordHash, deadline: context.deadline)
            guard matches, let account else {
                context.logger.info("auth.login_failed")
                throw Self.invalidCredentials
            }
            // Only the account's owner (the right password) learns that it is suspended.
            guard account.state == Auth.AccountState.active.rawValue else {
                context.logger.info("auth.login_suspended", metadata: ["user.id": account.identity.id])
                throw Self.accountSuspended
            }
            let (session, reply) = Self.newSession(userId: account.identity.id, now: clock.now(), ttlMs: sessionTTLMs)
            try await sessions.start(session, clearing: key)
            context.logger.info("auth.logged_in", metadata: ["user.id": account.identity.id, "session.id": session.id])
            return Auth.SessionReply(identity: account.identity, session: reply)
        }
    }

    /// The live session behind a bearer token. - Throws: 401 `invalid_token`.
    func validate(_ request: Auth.Validate.Request) async throws -> Auth.Validate.Reply {
        guard request.token.utf8.count <= SessionToken.maxLength,
            let session = try await sessions.validate(tokenDigest: SessionToken.digest(request.token), now: clock.now())
        else { throw Self.invalidToken }
        return session
    }

    /// Revokes the token's session, or with `allSessions` every live session of its user.
    /// - Throws: 401 `invalid_token` when the token is not a live session.
    func logout(_ request: Auth.Logout.Request, _ context: RequestContext) async throws -> Auth.Logout.Reply {
        guard request.token.utf8.count <= SessionToken.maxLength,
            let reply = try await sessions.revoke(
                tokenDigest: SessionToken.digest(request.token), allSessions: request.allSessions, now: clock.now())
        else { throw Self.invalidToken }
        context.logger.info(
            "auth.logged_out", metadata: ["user.id": reply.userId, "sessions": "\(reply.revokedSessionIds.count)"])
        return reply
    }
}
