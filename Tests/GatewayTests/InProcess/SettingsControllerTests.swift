import Messages
import Testing
import Wire

@testable import Gateway

/// Settings and profile changes in process: `null` clears only what can be cleared, and every
/// member is a string or a boolean as documented.
@Suite struct SettingsControllerTests {
    let gateway = InProcessGateway()

    @Test func nullClearsTheClearableMembersAndIsRefusedForTheOthers() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.UpdateMe.self) { _, _ in Fixtures.me("alice") }
        let r = await gateway.request(
            .patch, "/v1/me/profile", token: token,
            json: #"{"phone": null, "bio": "hi", "profilePhotoURL": null, "birthDate": "2000-01-01"}"#)
        #expect(r.status == 200)
        let sent = gateway.profile.requests(Profile.UpdateMe.self).first
        #expect(sent?.clear == ["phone", "profilePhotoURL"] && sent?.bio == "hi" && sent?.birthDate == "2000-01-01")
        #expect(sent?.name == nil && sent?.phone == nil)
        // `null` for a member that cannot be cleared is named before any other member is read.
        let name = await gateway.request(.patch, "/v1/me/profile", token: token, json: #"{"phone": 5, "name": null}"#)
        #expect(name["detail"] == .string("name: must be a string (it cannot be cleared)"))
        let phone = await gateway.request(.patch, "/v1/me/profile", token: token, json: #"{"phone": 5}"#)
        #expect(phone["detail"] == .string("phone: must be a string"))
        let unknown = await gateway.request(.patch, "/v1/me/profile", token: token, json: #"{"bio": "x", "isAdmin": true}"#)
        #expect(unknown.code == "unknown_field" && unknown.fields == ["isAdmin"])
        #expect(gateway.profile.count(Profile.UpdateMe.self) == 1)
    }

    @Test func saveOriginalPostsIsARequiredBoolean() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.UpdateSettings.self) { _, _ in Profile.Settings(sections: []) }
        let ok = await gateway.request(.patch, "/v1/settings", token: token, json: #"{"saveOriginalPosts": false}"#)
        #expect(ok.status == 200 && gateway.profile.requests(Profile.UpdateSettings.self).first?.saveOriginalPosts == false)
        for (body, detail) in [
            ("{}", "saveOriginalPosts: is required"), (#"{"saveOriginalPosts": null}"#, "saveOriginalPosts: is required"),
            (#"{"saveOriginalPosts": 1}"#, "saveOriginalPosts: must be true or false"),
        ] {
            let r = await gateway.request(.patch, "/v1/settings", token: token, json: body)
            #expect(r.status == 400 && r["detail"] == .string(detail), "\(body)")
        }
    }
}
