import Messages
import Testing
import Wire

@testable import Gateway

/// `/v1/auth/*` and `/v1/me` in process: registration asks both owners to check their fields at
/// once and reports every error together, login makes a missing profile, logout ends the
/// session in the gateway at once.
@Suite struct AuthControllerTests {
    let gateway = InProcessGateway()

    /// The owners' checks pass, and registering `username` works.
    func servicesAccept() {
        gateway.auth.on(Auth.CheckIdentityFields.self) { _, _ in Empty() }
        gateway.profile.on(Profile.CheckProfileFields.self) { _, _ in Empty() }
        gateway.auth.on(Auth.Register.self) { request, _ in
            .init(
                identity: Fixtures.identity(request.username),
                session: .init(token: "tok-new", sessionId: "s-new", expiresAt: "2999-01-01T00:00:00.000Z"))
        }
        gateway.profile.on(Profile.CreateProfile.self) { request, _ in
            Fixtures.me(request.identity.username, name: request.name ?? "")
        }
        gateway.auth.on(Auth.CompleteRegistration.self) { _, _ in Empty() }
    }

    @Test func registrationNamesEveryMissingAndMistypedMemberWithTheOwnersErrors() async {
        servicesAccept()
        gateway.profile.on(Profile.CheckProfileFields.self) { request, _ in
            guard request.gender == nil else {
                throw ServiceError.validation([FieldError(field: "gender", code: "invalid_gender", message: "not a gender")])
            }
            return Empty()
        }
        let empty = await gateway.request(.post, "/v1/auth/register", json: "{}")
        #expect(empty.status == 400 && empty.code == "invalid_field")
        #expect(empty.fields == ["email", "username", "password"])
        let mixed = await gateway.request(.post, "/v1/auth/register", json: #"{"email": 5, "password": "pw", "gender": "robot"}"#)
        #expect(mixed.fields == ["email", "username", "gender"])
        // One shape problem alone is answered as it is.
        let one = await gateway.request(
            .post, "/v1/auth/register", json: #"{"email": "a@example.com", "username": "a", "password": 1}"#)
        #expect(one["detail"] == .string("password: must be a string") && one.fields == ["password"])
        // The owners check the members that are there (the identity fields go as given).
        #expect(gateway.auth.requests(Auth.CheckIdentityFields.self).last?.email == "a@example.com")
        #expect(gateway.auth.count(Auth.Register.self) == 0)
    }

    @Test func anUnknownRegistrationMemberIsRefusedBeforeAnyServiceIsAsked() async {
        servicesAccept()
        let r = await gateway.request(
            .post, "/v1/auth/register",
            json: #"{"email": "a@example.com", "username": "a", "password": "long-enough-1", "isAdmin": true}"#)
        #expect(r.status == 400 && r.code == "unknown_field" && r.fields == ["isAdmin"])
        #expect(gateway.auth.calls.isEmpty && gateway.profile.calls.isEmpty)
    }

    @Test func registrationMakesTheAccountThenItsProfile() async {
        servicesAccept()
        let r = await gateway.request(
            .post, "/v1/auth/register",
            json: #"{"email": "bo@example.com", "username": "bo", "password": "long-enough-1", "name": "Bo"}"#)
        #expect(r.status == 201 && r["token"] == .string("tok-new"))
        #expect(gateway.profile.requests(Profile.CreateProfile.self).first?.name == "Bo")
        #expect(gateway.auth.calls.map(\.type).suffix(2) == ["auth.register", "auth.complete_registration"])
        // Hashing a password gets the longer deadline.
        #expect(gateway.auth.calls.first { $0.type == "auth.register" }?.timeoutMs == 10_000)
    }

    @Test func loginMakesTheProfileWhenProfileServiceHasNone() async {
        servicesAccept()
        gateway.auth.on(Auth.Login.self) { request, _ in
            .init(
                identity: Fixtures.identity(request.login),
                session: .init(token: "tok-login", sessionId: "s-login", expiresAt: "2999-01-01T00:00:00.000Z"))
        }
        gateway.profile.on(Profile.GetMe.self) { _, _ in throw ServiceError.notFound("profile") }
        let r = await gateway.request(
            .post, "/v1/auth/login", json: #"{"login": "cy", "password": "pw"}"#, headers: [("x-forwarded-for", "10.0.0.9")])
        #expect(r.status == 200 && r["token"] == .string("tok-login"))
        #expect(gateway.profile.count(Profile.CreateProfile.self) == 1)
        // The TCP peer is not a trusted proxy: its X-Forwarded-For is not believed.
        #expect(gateway.auth.requests(Auth.Login.self).first?.clientAddress == "127.0.0.1")
        let extra = await gateway.request(.post, "/v1/auth/login", json: #"{"login": "cy", "password": "pw", "otp": 1}"#)
        #expect(extra.code == "unknown_field" && extra.fields == ["otp"])
    }

    @Test func logoutEndsTheSessionInTheGatewayAtOnce() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.GetMe.self) { _, _ in Fixtures.me("alice") }
        #expect(await gateway.request(.get, "/v1/me", token: token).status == 200)
        gateway.auth.on(Auth.Logout.self) { request, _ in
            #expect(request.token == token && request.allSessions)
            return .init(userId: "u-alice", revokedSessionIds: ["s-other"])
        }
        let out = await gateway.request(.post, "/v1/auth/logout", token: token, json: #"{"allSessions": true}"#)
        #expect(out.status == 200 && out.text == #"{"loggedOut":true}"#)
        // The cached token is dropped: the next request asks AuthService again.
        let validations = gateway.auth.count(Auth.Validate.self)
        _ = await gateway.request(.get, "/v1/me", token: token)
        #expect(gateway.auth.count(Auth.Validate.self) == validations + 1)
        let wrong = await gateway.request(.post, "/v1/auth/logout", token: token, json: #"{"allSessions": "yes"}"#)
        #expect(wrong["detail"] == .string("allSessions: must be true or false"))
    }
}
