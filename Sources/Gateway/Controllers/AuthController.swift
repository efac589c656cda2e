import Messages
import Support
import Wire

/// `/v1/auth/*` and `/v1/me`: accounts and sessions (AuthService, then ProfileService).
struct AuthController: Controller {
    let auth: Backend
    let profile: Backend
    let sessions: SessionControl
    let clientAddress: ClientAddress
    /// Deadline of the calls that hash a password (register, login), in ms.
    let passwordTimeoutMs: Int

    func register(_ routes: inout RouteCollection) {
        routes.add("POST", "/v1/auth/register", authenticated: false, json: true) { try await register($0) }
        routes.add("POST", "/v1/auth/login", authenticated: false, json: true) { try await login($0) }
        routes.add("POST", "/v1/auth/logout", json: true) { try await logout($0) }
        routes.add("GET", "/v1/me") { request in
            try .json(try await profile.call(Profile.GetMe.self, .init(userId: try request.userId)))
        }
    }

    /// `POST /v1/auth/register` `{email, username, password, name?, birthDate?, gender?}` → 201
    /// `{user: Me, token, expiresAt}`. Every field error at once: AuthService and ProfileService
    /// check their fields together before the account is created.
    func register(_ request: Request) async throws -> HTTPResponse {
        let body = try request.body()
        try body.allowOnly(["email", "username", "password", "name", "birthDate", "gender"])
        // Missing and mistyped members are collected, not thrown one at a time, so `{}` names
        // every required field and the owners' checks still run on the members that are there.
        var shapeProblems: [Problem] = []
        func member<T>(_ read: () throws -> T?) throws -> T? {
            do { return try read() } catch let problem as Problem where problem.status == 400 {
                shapeProblems.append(problem)
                return nil
            }
        }
        let email = try member { try body.string("email") }
        let username = try member { try body.string("username") }
        let password = try member { try body.string("password") }
        let name = try member { try body.optionalString("name") }
        let birthDate = try member { try body.optionalString("birthDate") }
        let gender = try member { try body.optionalString("gender") }
        async let identityCheck = check {
            _ = try await auth.call(
                Auth.CheckIdentityFields.self, .init(email: email, username: username, password: password))
        }
        async let profileCheck = check {
            _ = try await profile.call(Profile.CheckProfileFields.self, .init(name: name, birthDate: birthDate, gender: gender))
        }
        let (identityError, profileError) = try await (identityCheck, profileCheck)
        let fieldErrors =
            shapeProblems.flatMap { $0.errors ?? [] } + (identityError?.fields ?? []) + (profileError?.fields ?? [])
        switch (shapeProblems.count, identityError, profileError) {
        case (0, nil, nil): break
        case (0, let error?, nil), (0, nil, let error?): throw error
        case (1, nil, nil): throw shapeProblems[0]
        default: throw ServiceError.validation(fieldErrors)
        }
        guard let email, let username, let password else { throw ServiceError.validation(fieldErrors) }
        // A registration whose profile could not be made is answered 503 and stays unfinished in
        // AuthService: the same request again finishes it (a new session, the profile made)
        // rather than finding the email taken.
        let session = try await auth.call(
            Auth.Register.self, .init(email: email, username: username, password: password), timeoutMs: passwordTimeoutMs)
        let me = try await profile.call(
            Profile.CreateProfile.self, .init(identity: session.identity, name: name, birthDate: birthDate, gender: gender))
        await completeRegistration(session.identity.id, logger: request.logger)
        return try .json(201, SessionShape(user: me, token: session.session.token, expiresAt: session.session.expiresAt))
    }

    /// Tells AuthService the account's profile exists, so a repeat of its registration is 409.
    /// Best effort: if it is lost, a repeat within `Auth.Register.resumeWindowMs` gets the same
    /// account with a new session, which the password entitles it to anyway.
    private func completeRegistration(_ userId: String, logger: Logger) async {
        do {
            _ = try await auth.call(Auth.CompleteRegistration.self, .init(userId: userId))
        } catch {
            logger.warning("register.complete_failed", metadata: ["user.id": userId, "error": "\(error)"])
        }
    }

    /// The validation failure of a check (nil when it passed); other errors are thrown.
    private func check(_ body: () async throws -> Void) async throws -> ServiceError? {
        do {
            try await body()
            return nil
        } catch let error as ServiceError where error.status == 400 && error.fields != nil {
            return error
        }
    }

    /// `POST /v1/auth/login` `{login, password}` → `{user: Me, token, expiresAt}`.
    func login(_ request: Request) async throws -> HTTPResponse {
        let body = try request.body()
        try body.allowOnly(["login", "password"])
        let session = try await auth.call(
            Auth.Login.self,
            .init(login: try body.string("login"), password: try body.string("password"), clientAddress: request.clientAddress),
            timeoutMs: passwordTimeoutMs)
        let me: Me
        do {
            me = try await profile.call(Profile.GetMe.self, .init(userId: session.identity.id))
        } catch let error as ServiceError where error.status == 404 {
            // Registered while ProfileService was down: create the profile now (idempotent).
            me = try await profile.call(
                Profile.CreateProfile.self, .init(identity: session.identity, name: nil, birthDate: nil, gender: nil))
            await completeRegistration(session.identity.id, logger: request.logger)
        }
        return try .json(SessionShape(user: me, token: session.session.token, expiresAt: session.session.expiresAt))
    }

    /// `POST /v1/auth/logout` `{allSessions?}` → `{loggedOut: true}`; the sessions' cached tokens
    /// are dropped and their streams closed at once.
    func logout(_ request: Request) async throws -> HTTPResponse {
        let body = try request.body()
        try body.allowOnly(["allSessions"])
        let all = try body.optionalBool("allSessions") ?? false
        guard let session = request.session else { throw Problem.unauthorized("unauthorized", "authentication is required") }
        let result = try await auth.call(Auth.Logout.self, .init(token: session.token, allSessions: all))
        sessions.revoke(result.revokedSessionIds + [session.sessionId])
        return try .json(LoggedOutShape())
    }
}

/// Ends sessions in the gateway: their cached tokens and their open streams.
struct SessionControl: Sendable {
    let tokens: TokenCache
    let hub: StreamHub

    func revoke(_ sessionIds: [String]) {
        tokens.revoke(sessionIds: sessionIds)
        hub.close(sessionIds: sessionIds)
    }
}
