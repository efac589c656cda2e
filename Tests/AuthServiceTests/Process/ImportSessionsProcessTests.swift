import Foundation
import Harness
import Messages
import TestSupport
import Testing
import Transport
import Wire

/// `auth.import_sessions` through the real executables: the gateway's bearer check accepts an
/// imported session as a login's and logout revokes it; the gateway has no route to it; an
/// AuthService not configured for it refuses it.
@Suite(.serialized) struct ImportSessionsProcessTests {
    @Test func theGatewayAcceptsAnImportedSessionAndLogoutRevokesIt() async throws {
        let cluster = Cluster(extraEnvironment: ["ALLOW_IMPORTS": "1"])
        defer { cluster.stopAll() }
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        let context = ZMQContext()
        let auth = try cluster.client("auth", context: context)
        defer { auth.shutdown() }
        try await waitUntilReachable(auth)
        let http = HTTPClient(port: cluster.gatewayPort)
        let username = "imp\(RandomID.make().prefix(8))"
        let registered = try http.request(
            "POST", "/v1/auth/register",
            json: ["email": "\(username)@example.com", "username": username, "password": "correct-horse-9"])
        #expect(registered.status == 201, "register: \(registered.status) \(registered.text)")
        let userId = try #require((registered.object["user"] as? [String: Any])?["id"] as? String)
        let loginToken = try #require(registered.object["token"] as? String)

        let reply = try await auth.call(Auth.ImportSessions.self, .init(userIds: [userId]))
        let imported = try #require(reply.sessions.first)
        #expect(reply.sessions.count == 1 && imported.identity.id == userId && imported.identity.username == username)
        let me = try http.request("GET", "/v1/me", token: imported.session.token)
        #expect(me.status == 200, "GET /v1/me: \(me.status) \(me.text)")
        #expect(me.object["id"] as? String == userId && me.object["username"] as? String == username)

        // Not on the public API.
        let routed = try http.request(
            "POST", "/v1/auth/import_sessions", token: loginToken, json: ["userIds": [userId]])
        #expect(routed.status == 404 || routed.status == 405, "\(routed.status) \(routed.text)")

        // Logging out the imported session ends it, and only it.
        let out = try http.request("POST", "/v1/auth/logout", token: imported.session.token, json: [:])
        #expect(out.status == 200 && out.object["loggedOut"] as? Bool == true, "logout: \(out.status) \(out.text)")
        #expect(try http.request("GET", "/v1/me", token: imported.session.token).status == 401)
        #expect(try http.request("GET", "/v1/me", token: loginToken).status == 200)
    }

    @Test func anAuthServiceNotConfiguredForItRefusesIt() async throws {
        let auth = try await AuthFixture.start()
        let alice = try await auth.register("alice")
        let refused = await expectError("imports_disabled", status: 403) {
            _ = try await auth.client.call(Auth.ImportSessions.self, .init(userIds: [alice.identity.id]))
        }
        #expect(refused?.message.contains("ALLOW_IMPORTS") == true)
        // Explicitly off is off too.
        let off = try await AuthFixture.start(["ALLOW_IMPORTS": "0"])
        let bob = try await off.register("bob")
        await expectError("imports_disabled", status: 403) {
            _ = try await off.client.call(Auth.ImportSessions.self, .init(userIds: [bob.identity.id]))
        }
    }
}
