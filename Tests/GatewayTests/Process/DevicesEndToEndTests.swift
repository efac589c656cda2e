import Foundation
import Harness
import TestSupport
import Testing
import Wire

/// Devices and push preferences over HTTP against the four real executables (either engine):
/// register (201, the token's case folded), list, validation naming the field, a token moving
/// to the user who registers it again, delete (someone else's or unknown: 404), preferences
/// get and patch, and logout removing the devices registered with that session; without
/// `APNS_*` NotificationService says once that push is off.
@Suite(.serialized)
struct DevicesEndToEndTests {
    struct TimedOut: Error { var what: String }

    static let token = String(repeating: "ab", count: 32)
    /// The app installation of the phone the tests register from (iOS writes UUIDs in capitals).
    static let phone = "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"

    /// The `field` of a problem's first error.
    static func field(_ r: HTTPResponse) -> String? {
        (r.object["errors"] as? [[String: Any]])?.first?["field"] as? String
    }

    static func devices(_ http: HTTPClient, _ token: String) throws -> [[String: Any]] {
        let r = try http.request("GET", "/v1/devices", token: token)
        #expect(r.status == 200, "\(r.text)")
        return r.object["items"] as? [[String: Any]] ?? []
    }

    @Test func registerListMoveDeleteAndValidate() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (alice, _) = try EndToEndTests.register(http, "d\(tag)a")
        let (bob, _) = try EndToEndTests.register(http, "d\(tag)b")

        let created = try http.request(
            "POST", "/v1/devices", token: alice,
            json: ["platform": "ios", "token": Self.token.uppercased(), "environment": "sandbox", "installationId": Self.phone])
        #expect(created.status == 201, "\(created.text)")
        let id = try #require(created.object["id"] as? String)
        #expect(id.count == 32 && created.object["platform"] as? String == "ios")
        #expect(created.object["environment"] as? String == "sandbox" && created.object["createdAt"] is String)
        #expect(Set(created.object.keys) == ["id", "platform", "environment", "createdAt"])
        #expect(try Self.devices(http, alice).map { $0["id"] as? String } == [id])
        #expect(try Self.devices(http, bob).isEmpty)

        // Validation: 400 naming the field; nothing registered.
        let bad: [([String: Any], String)] = [
            (["platform": "android", "token": Self.token, "environment": "sandbox"], "platform"),
            (["token": Self.token, "environment": "sandbox"], "platform"),
            (["platform": "ios", "token": "abc", "environment": "sandbox", "installationId": Self.phone], "token"),
            (
                [
                    "platform": "ios", "token": String(repeating: "a", count: 33), "environment": "sandbox",
                    "installationId": Self.phone,
                ], "token"
            ),
            (
                [
                    "platform": "ios", "token": String(repeating: "ab", count: 101), "environment": "sandbox",
                    "installationId": Self.phone,
                ], "token"
            ),
            (
                [
                    "platform": "ios", "token": String(repeating: "zz", count: 16), "environment": "sandbox",
                    "installationId": Self.phone,
                ], "token"
            ),
            (["platform": "ios", "token": 12, "environment": "sandbox", "installationId": Self.phone], "token"),
            (["platform": "ios", "token": Self.token, "environment": "development"], "environment"),
            (["platform": "ios", "token": Self.token, "environment": "sandbox", "extra": 1], "extra"),
            (["platform": "ios", "token": Self.token, "environment": "sandbox"], "installationId"),
            (["platform": "ios", "token": Self.token, "environment": "sandbox", "installationId": "phone-1"], "installationId"),
        ]
        for (body, field) in bad {
            let r = try http.request("POST", "/v1/devices", token: alice, json: body)
            #expect(r.status == 400 && Self.field(r) == field, "\(body): \(r.status) \(r.text)")
            #expect(r.header("content-type")?.hasPrefix("application/problem+json") == true)
        }
        let anonymous = try http.request(
            "POST", "/v1/devices",
            json: ["platform": "ios", "token": Self.token, "environment": "sandbox", "installationId": Self.phone])
        #expect(anonymous.status == 401)

        // Registered again by alice: the same device. By bob from another installation (someone who
        // learned the token): 409 device_token_in_use, and nothing changes; from the same phone (a
        // sign-out and a sign-in there): it moves to him, with a new id.
        let again = try http.request(
            "POST", "/v1/devices", token: alice,
            json: ["platform": "ios", "token": Self.token, "environment": "production", "installationId": Self.phone])
        #expect(again.status == 201 && again.object["id"] as? String == id)
        #expect(again.object["environment"] as? String == "production")
        let stolen = try http.request(
            "POST", "/v1/devices", token: bob,
            json: [
                "platform": "ios", "token": Self.token, "environment": "sandbox",
                "installationId": "0F3C2B1A-0000-4000-8000-000000000001",
            ])
        #expect(stolen.status == 409 && stolen.object["code"] as? String == "device_token_in_use", "\(stolen.text)")
        #expect(try Self.devices(http, alice).map { $0["id"] as? String } == [id])
        #expect(try Self.devices(http, bob).isEmpty)
        let moved = try http.request(
            "POST", "/v1/devices", token: bob,
            json: ["platform": "ios", "token": Self.token, "environment": "sandbox", "installationId": Self.phone])
        #expect(moved.status == 201)
        let bobsId = try #require(moved.object["id"] as? String)
        #expect(bobsId != id)
        #expect(try Self.devices(http, alice).isEmpty)
        #expect(try Self.devices(http, bob).map { $0["id"] as? String } == [bobsId])

        // Delete: someone else's or unknown is 404; one's own is 204.
        for path in ["/v1/devices/\(bobsId)", "/v1/devices/\(id)", "/v1/devices/nothing"] {
            let r = try http.request("DELETE", path, token: alice)
            #expect(r.status == 404 && r.object["code"] as? String == "not_found", "\(path): \(r.text)")
        }
        let deleted = try http.request("DELETE", "/v1/devices/\(bobsId)", token: bob)
        #expect(deleted.status == 204 && deleted.body.isEmpty)
        #expect(try Self.devices(http, bob).isEmpty)
        #expect(try http.request("DELETE", "/v1/devices/\(bobsId)", token: bob).status == 404)

        // Paging.
        for n in 1...3 {
            let token = String(repeating: "0", count: 63) + "\(n)"
            let r = try http.request(
                "POST", "/v1/devices", token: alice,
                json: ["platform": "ios", "token": token, "environment": "sandbox", "installationId": Self.phone])
            #expect(r.status == 201)
        }
        let first = try http.request("GET", "/v1/devices?limit=2", token: alice)
        #expect((first.object["items"] as? [Any])?.count == 2)
        let cursor = try #require(first.object["nextCursor"] as? String)
        let second = try http.request("GET", "/v1/devices?limit=2&cursor=\(cursor)", token: alice)
        #expect((second.object["items"] as? [Any])?.count == 1 && second.object["nextCursor"] is NSNull)
        #expect(try http.request("GET", "/v1/devices?cursor=\(cursor)", token: bob).status == 400)
    }

    @Test func preferencesGetAndPatch() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let (token, _) = try EndToEndTests.register(http, "p\(RandomID.make().prefix(6))")
        // No APNS_* here: push is off, and NotificationService said so once at start.
        let log = try String(contentsOfFile: try #require(cluster.processes["notification"]).logPath, encoding: .utf8)
        #expect(log.components(separatedBy: "push is off: APNS_* unset").count == 2, "\(log.suffix(2_000))")
        let all = ["like": true, "follow": true, "comment": true, "tag": true, "post": true]

        let initial = try http.request("GET", "/v1/notifications/preferences", token: token)
        #expect(initial.status == 200 && initial.object["push"] as? [String: Bool] == all, "\(initial.text)")
        let patched = try http.request(
            "PATCH", "/v1/notifications/preferences", token: token, json: ["push": ["like": false, "tag": false]])
        var expected = all
        expected["like"] = false
        expected["tag"] = false
        #expect(patched.status == 200 && patched.object["push"] as? [String: Bool] == expected, "\(patched.text)")
        let again = try http.request("PATCH", "/v1/notifications/preferences", token: token, json: ["push": ["tag": true]])
        expected["tag"] = true
        #expect(again.object["push"] as? [String: Bool] == expected)
        #expect(
            try http.request("GET", "/v1/notifications/preferences", token: token).object["push"] as? [String: Bool]
                == expected)

        let bad: [([String: Any], String)] = [
            (["push": ["likes": false]], "push.likes"),
            (["push": ["like": "no"]], "push.like"),
            (["push": ["like": NSNull()]], "push.like"),
            (["push": false], "push"),
            (["email": false], "email"),
            ([:], "push"),
        ]
        for (body, field) in bad {
            let r = try http.request("PATCH", "/v1/notifications/preferences", token: token, json: body)
            #expect(r.status == 400 && Self.field(r) == field, "\(body): \(r.status) \(r.text)")
        }
        // No body at all (schemathesis found it answered 200): `push` is required.
        let empty = try http.request("PATCH", "/v1/notifications/preferences", token: token)
        #expect(empty.status == 400 && Self.field(empty) == "push", "\(empty.status) \(empty.text)")
        #expect(
            try http.request("GET", "/v1/notifications/preferences", token: token).object["push"] as? [String: Bool]
                == expected)
    }

    @Test func logoutRemovesTheDevicesOfThatSession() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let name = "l\(RandomID.make().prefix(6))"
        let (phone, _) = try EndToEndTests.register(http, name)
        let login = try http.request("POST", "/v1/auth/login", json: ["login": name, "password": "correct-horse-9"])
        let tablet = try #require(login.object["token"] as? String)
        for (session, token) in [(phone, Self.token), (tablet, String(repeating: "cd", count: 32))] {
            let r = try http.request(
                "POST", "/v1/devices", token: session,
                json: ["platform": "ios", "token": token, "environment": "sandbox", "installationId": Self.phone])
            #expect(r.status == 201)
        }
        #expect(try Self.devices(http, phone).count == 2)
        #expect(try http.request("POST", "/v1/auth/logout", token: tablet, json: [:]).status == 200)
        // The event reaches NotificationService asynchronously.
        let deadline = Timestamp.nowMs() + 60_000
        while try Self.devices(http, phone).count != 1 {
            guard Timestamp.nowMs() < deadline else { throw TimedOut(what: "the tablet's device still registered") }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try Self.devices(http, phone).count == 1)
    }
}
