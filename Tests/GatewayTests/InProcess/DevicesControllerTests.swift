import Messages
import Testing
import Wire

@testable import Gateway

/// Devices and push preferences in process: a device token checked and lowercased, each member
/// of a device checked before the next, and preferences named member by member.
@Suite struct DevicesControllerTests {
    let gateway = InProcessGateway()

    @Test func aDeviceIsRegisteredWithTheCallersSessionAndItsTokenLowercased() async {
        let token = gateway.signIn("alice")
        gateway.notification.on(Notifications.RegisterDevice.self) { request, _ in
            .init(id: "d1", platform: "ios", environment: request.environment, createdAt: "2026-01-01T00:00:00.000Z")
        }
        let apns = String(repeating: "AB", count: 32)
        let r = await gateway.request(
            .post, "/v1/devices", token: token,
            json:
                #"{"platform": "ios", "token": "\#(apns)", "environment": "sandbox", "installationId": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}"#
        )
        #expect(r.status == 201 && r["id"] == .string("d1"))
        let sent = gateway.notification.requests(Notifications.RegisterDevice.self).first
        #expect(sent?.token == apns.lowercased() && sent?.sessionId == "s-alice" && sent?.userId == "u-alice")
        #expect(sent?.installationId == "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
    }

    @Test func eachMemberOfADeviceIsCheckedBeforeTheNext() async {
        let token = gateway.signIn("alice")
        for (body, field, detail) in [
            (#"{"platform": "android", "token": 5}"#, "platform", #"platform: must be "ios""#),
            (
                #"{"platform": "ios", "token": "xyz", "environment": 1}"#, "token",
                "token: must be an APNs device token: 16 to 200 hex digits, an even number"
            ),
            (
                #"{"platform": "ios", "token": "\#(String(repeating: "a", count: 64))", "environment": "staging"}"#,
                "environment",
                #"environment: must be "sandbox" or "production""#
            ),
            (#"{"platform": "ios"}"#, "token", "token: is required"),
            (
                #"{"platform": "ios", "token": "\#(String(repeating: "a", count: 64))", "environment": "sandbox"}"#,
                "installationId", "installationId: is required"
            ),
            (
                #"{"platform": "ios", "token": "\#(String(repeating: "a", count: 64))", "environment": "sandbox", "installationId": "x"}"#,
                "installationId", "installationId: must be a UUID (the one the app made at its installation)"
            ),
        ] {
            let r = await gateway.request(.post, "/v1/devices", token: token, json: body)
            #expect(r.status == 400 && r.fields == [field] && r["detail"] == .string(detail), "\(body): \(r.text)")
        }
        #expect(gateway.notification.calls.isEmpty)
    }

    @Test func preferencesNameEachUnknownOrNonBooleanTypeInTheBodysOrder() async {
        let token = gateway.signIn("alice")
        gateway.notification.on(Notifications.UpdatePushPreferences.self) { request, _ in
            .init(
                like: request.like ?? true, follow: request.follow ?? true, comment: request.comment ?? true,
                tag: request.tag ?? true, post: request.post ?? true)
        }
        let ok = await gateway.request(
            .patch, "/v1/notifications/preferences", token: token, json: #"{"push": {"like": false, "post": true}}"#)
        #expect(ok.status == 200)
        let sent = gateway.notification.requests(Notifications.UpdatePushPreferences.self).first
        #expect(sent?.like == false && sent?.post == true && sent?.follow == nil)
        for (body, code, field, detail) in [
            ("{}", "invalid_field", "push", "push: is required"),
            (
                #"{"push": null}"#, "invalid_field", "push",
                "push: must be an object of booleans: like, follow, comment, tag, post"
            ),
            (#"{"push": {"like": 1, "mentions": true}}"#, "invalid_field", "push.like", "push.like: must be true or false"),
            (#"{"push": {"mentions": true, "like": 1}}"#, "unknown_field", "push.mentions", "unknown field `push.mentions`"),
            (#"{"push": {"like": null}}"#, "invalid_field", "push.like", "push.like: must be true or false"),
            (#"{"push": {}, "email": {}}"#, "unknown_field", "email", "unknown field `email`"),
        ] {
            let r = await gateway.request(.patch, "/v1/notifications/preferences", token: token, json: body)
            #expect(r.status == 400 && r.code == code && r.fields == [field], "\(body): \(r.text)")
            #expect(r["detail"] == .string(detail), "\(body): \(r.text)")
        }
        #expect(gateway.notification.count(Notifications.UpdatePushPreferences.self) == 1)
    }
}
