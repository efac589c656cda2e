import Messages
import Support
import Wire

/// `/v1/auth/*` and `/v1/me`: accounts and sessions (AuthService, then ProfileService), the
/// password and the account's deletion (API.md "Account lifecycle and moderation").
struct AuthController: Controller {
    let auth: any ServiceBackend
    let profile: any ServiceBackend
    let notification: any ServiceBackend
    let sessions: SessionControl
    let clientAddress: ClientAddress
    /// Deadline of the calls that hash a password (register, login), in ms.
    let passwordTimeoutMs: Int

    func register(_ routes: inout RouteCollection) {
        routes.add(.post, "/v1/auth/register", authenticated: false, body: .json) { try await register($0) }
        routes.add(.post, "/v1/auth/login", authenticated: false, body: .json) { try await login($0) }
        routes.add(.post, "/v1/auth/logout", body: .json) { try await logout($0) }
        routes.add(.get, "/v1/me") { request in
            try .json(try await profile.call(Profile.GetMe.self, .init(userId: try request.userId)))
        }
        routes.add(.put, "/v1/me/password", body: .json) { try await changePassword($0) }
        routes.add(.delete, "/v1/me", body: .json) { try await deleteAccount($0) }
    }

    /// `PUT /v1/me/password` `{currentPassword, newPassword}` → 204; every other session of the
    /// user ends (their cached tokens and streams at once). 403 `invalid_credentials` for a
    /// wrong current password, 400 `weak_password` / `password_too_long` (field `newPassword`).
    func changePassword(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(PasswordBody.self)
        guard let session = request.session else { throw Problem.unauthorized(.unauthorized, "authentication is required") }
        let reply = try await auth.call(
            Auth.ChangePassword.self,
            .init(
                userId: session.userId, sessionId: session.sessionId, currentPassword: body.currentPassword,
                newPassword: body.newPassword, clientAddress: request.clientAddress),
            timeoutMs: passwordTimeoutMs)
        sessions.revoke(reply.revokedSessionIds)
        return HTTPResponse(status: 204)
    }

    /// `DELETE /v1/me` `{password}` → 202 `{status: "deleting"}`: every session ends (streams
    /// closed here at once, elsewhere on `auth.session.revoked`), and ProfileService and
    /// NotificationService are told before the answer, so the user's content is 404 from the
    /// moment the client reads it (the `auth.account.state_changed` event tells them too, for
    /// when one of them cannot be reached now). The rest of the erasure runs in the background
    /// (the saga on `Auth` in Messages). 403 `invalid_credentials` for a wrong password.
    func deleteAccount(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(DeleteAccountBody.self)
        guard let session = request.session else { throw Problem.unauthorized(.unauthorized, "authentication is required") }
        let reply = try await auth.call(
            Auth.DeleteAccount.self,
            .init(userId: session.userId, password: body.password, clientAddress: request.clientAddress),
            timeoutMs: passwordTimeoutMs)
        sessions.revoke(reply.revokedSessionIds + [session.sessionId])
        await Self.announce(
            AccountStateRequest(userId: session.userId, state: reply.status, version: reply.version),
            profile: profile, notification: notification, logger: request.logger)
        return try .json(202, DeletionShape(status: reply.status.rawValue))
    }

    /// Sends an account's new state to ProfileService and NotificationService at once, best
    /// effort: a service that cannot be reached gets it from AuthService's event instead.
    static func announce(
        _ state: AccountStateRequest, profile: any ServiceBackend, notification: any ServiceBackend, logger: Logger
    ) async {
        async let toProfile: Void = tell { _ = try await profile.call(Profile.ApplyAccountState.self, state) }
        async let toNotification: Void = tell {
            _ = try await notification.call(Notifications.ApplyAccountState.self, state)
        }
        func tell(_ call: () async throws -> Void) async {
            do { try await call() } catch {
                logger.warning(
                    "account_state.announce_failed",
                    metadata: ["user.id": state.userId, "state": state.state.rawValue, "error": "\(error)"])
            }
        }
        _ = await (toProfile, toNotification)
    }

    /// `POST /v1/auth/register` `{email, username, password, name?, birthDate?, gender?}` → 201
    /// `{user: Me, token, expiresAt}`. Every field error at once: AuthService and ProfileService
    /// check their fields together before the account is created. The word list's refusals (422
    /// `objectionable_content`: a username or name with a listed term) come once every field is
    /// otherwise valid, both services' at once.
    func register(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(RegisterBody.self)
        let (email, username, password) = (body.email, body.username, body.password)
        let (name, birthDate, gender) = (body.name, body.birthDate, body.gender)
        let shapeProblems = body.problems
        async let identityCheck = check {
            _ = try await auth.call(
                Auth.CheckIdentityFields.self, .init(email: email, username: username, password: password))
        }
        async let profileCheck = check {
            _ = try await profile.call(Profile.CheckProfileFields.self, .init(name: name, birthDate: birthDate, gender: gender))
        }
        let (identityCheckError, profileCheckError) = try await (identityCheck, profileCheck)
        let objectionable = [identityCheckError, profileCheckError].compactMap { $0 }.filter { $0.status == 422 }
        let (identityError, profileError) = (
            identityCheckError.flatMap { $0.status == 400 ? $0 : nil }, profileCheckError.flatMap { $0.status == 400 ? $0 : nil }
        )
        let fieldErrors =
            shapeProblems.flatMap { $0.errors ?? [] } + (identityError?.fields ?? []) + (profileError?.fields ?? [])
        switch (shapeProblems.count, identityError, profileError) {
        case (0, nil, nil):
            if !objectionable.isEmpty { throw ServiceError.objectionableContent(objectionable.flatMap { $0.fields ?? [] }) }
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

    /// The validation failure of a check (nil when it passed): 400 with fields, or the word
    /// list's 422 `objectionable_content`; other errors are thrown.
    private func check(_ body: () async throws -> Void) async throws -> ServiceError? {
        do {
            try await body()
            return nil
        } catch let error as ServiceError
            where error.fields != nil && (error.status == 400 || error.errorCode == .objectionableContent)
        {
            return error
        }
    }

    /// `POST /v1/auth/login` `{login, password}` → `{user: Me, token, expiresAt}`.
    func login(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(LoginBody.self)
        let session = try await auth.call(
            Auth.Login.self, .init(login: body.login, password: body.password, clientAddress: request.clientAddress),
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
        let all = try request.decode(LogoutBody.self).allSessions ?? false
        guard let session = request.session else { throw Problem.unauthorized(.unauthorized, "authentication is required") }
        let result = try await auth.call(Auth.Logout.self, .init(token: session.token, allSessions: all))
        sessions.revoke(result.revokedSessionIds + [session.sessionId])
        return try .json(LoggedOutShape())
    }

    /// `POST /v1/auth/register`'s body. Missing and mistyped members are collected in
    /// `problems`, not thrown one at a time, so `{}` names every required field and the owners'
    /// checks still run on the members that are there; an unknown member is thrown at once.
    struct RegisterBody: Decodable {
        var email: String?
        var username: String?
        var password: String?
        var name: String?
        var birthDate: String?
        var gender: String?
        /// The members' own problems (400: missing, or not a string), in the members' order.
        var problems: [Problem] = []

        enum CodingKeys: String, CodingKey { case email, username, password, name, birthDate, gender }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            var problems: [Problem] = []
            func member<T>(_ read: () throws -> T?) throws -> T? {
                do { return try read() } catch let problem as Problem where problem.status == 400 {
                    problems.append(problem)
                    return nil
                }
            }
            email = try member { try c.decode(String.self, forKey: .email) }
            username = try member { try c.decode(String.self, forKey: .username) }
            password = try member { try c.decode(String.self, forKey: .password) }
            name = try member { try c.decodeIfPresent(String.self, forKey: .name) }
            birthDate = try member { try c.decodeIfPresent(String.self, forKey: .birthDate) }
            gender = try member { try c.decodeIfPresent(String.self, forKey: .gender) }
            self.problems = problems
        }
    }

    /// `POST /v1/auth/login`'s body.
    struct LoginBody: Decodable {
        var login: String
        var password: String
    }

    /// `PUT /v1/me/password`'s body.
    struct PasswordBody: Decodable {
        var currentPassword: String
        var newPassword: String
    }

    /// `DELETE /v1/me`'s body.
    struct DeleteAccountBody: Decodable {
        var password: String
    }

    /// `DELETE /v1/me`'s answer.
    struct DeletionShape: Encodable {
        var status: String
    }

    /// `POST /v1/auth/logout`'s body: `allSessions` ends every session of the account.
    struct LogoutBody: Decodable {
        var allSessions: Bool?
    }
}
