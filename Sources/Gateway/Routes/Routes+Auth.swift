import Shared

/// `/v1/auth/*` and `/v1/me`: accounts and sessions (AuthService, then ProfileService).
extension Gateway {
    /// `POST /v1/auth/register` `{email, username, password, name?, birthDate?, gender?}` →
    /// 201 `{user: Me, token, expiresAt}`.
    func register(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["email", "username", "password", "name", "birthDate", "gender"])
        let email = try body.string("email")
        let username = try body.string("username")
        let password = try body.string("password")
        let name = try body.optionalString("name")
        let birthDate = try body.optionalString("birthDate")
        let gender = try body.optionalString("gender")
        // Every profile-field error at once (AuthService reports its own fields together too).
        var errors: [FieldError] = []
        if let name, name.count > 100 {
            errors.append(FieldError(field: "name", code: "invalid_field", message: "must be at most 100 characters"))
        }
        if let birthDate, !FieldRules.isBirthDate(birthDate) {
            errors.append(
                FieldError(
                    field: "birthDate", code: "invalid_birth_date",
                    message: "must be a real date from 1900-01-01 to today, as YYYY-MM-DD"))
        }
        if let gender, !FieldRules.genders.contains(gender) {
            errors.append(
                FieldError(
                    field: "gender", code: "invalid_gender", message: "must be female, male, custom or prefer_not_to_say"))
        }
        if !errors.isEmpty {
            throw Problem(
                status: 400, code: "invalid_field",
                detail: errors.map { "\($0.field): \($0.message)" }.joined(separator: "; "), errors: errors)
        }
        let session = try await auth.call(
            Auth.Register.self, .init(email: email, username: username, password: password))
        let me = try await profile.call(
            Profile.CreateProfile.self,
            .init(identity: session.identity, name: name, birthDate: birthDate, gender: gender))
        return reply(201, sessionReply(me, session.session))
    }

    /// `POST /v1/auth/login` `{login, password}` → `{user: Me, token, expiresAt}`.
    func login(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["login", "password"])
        let login = try body.string("login")
        let password = try body.string("password")
        let session = try await auth.call(Auth.Login.self, .init(login: login, password: password))
        let me: Me
        do {
            me = try await profile.call(Profile.GetMe.self, .init(userId: session.identity.id))
        } catch let error as ServiceError where error.status == 404 {
            // Registered while ProfileService was down: create the profile now (idempotent).
            me = try await profile.call(
                Profile.CreateProfile.self,
                .init(identity: session.identity, name: nil, birthDate: nil, gender: nil))
        }
        return reply(200, sessionReply(me, session.session))
    }

    /// `POST /v1/auth/logout` `{allSessions?}` → `{loggedOut: true}`; drops cached tokens and
    /// closes the sessions' streams.
    func logout(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["allSessions"])
        let all = try body.optionalBool("allSessions") ?? false
        let result = try await auth.call(
            Auth.Logout.self, .init(token: call.token ?? "", allSessions: all))
        sessionsRevoked(result.revokedSessionIds + [call.session?.sessionId].compactMap { $0 })
        return reply(200, ["loggedOut": true])
    }

    /// `GET /v1/me` → `Me`.
    func getMe(_ call: Call) async throws -> HTTPResponse {
        reply(200, Shapes.me(try await profile.call(Profile.GetMe.self, .init(userId: call.userId))))
    }

    private func sessionReply(_ me: Me, _ session: Auth.Session) -> [String: Any] {
        ["user": Shapes.me(me), "token": session.token, "expiresAt": session.expiresAt]
    }
}
