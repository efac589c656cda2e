import Messages

/// Devices and push preferences (API.md "Devices and push", NotificationService): the caller's
/// APNs device tokens and which notification types are pushed to them.
struct DevicesController: Controller {
    let notification: Backend

    /// The API's `environment` values.
    static let environments: Set<String> = ["sandbox", "production"]
    /// The preference names of `{push: {...}}`.
    static let pushTypes = ["like", "follow", "comment", "tag", "post"]

    func register(_ routes: inout RouteCollection) {
        routes.add("POST", "/v1/devices", json: true) { try await registerDevice($0) }
        routes.add("GET", "/v1/devices") { request in
            try .json(
                try await notification.call(
                    Notifications.ListDevices.self, .init(userId: try request.userId, page: try request.page())))
        }
        routes.add("DELETE", "/v1/devices/{id}") { request in
            _ = try await notification.call(
                Notifications.DeleteDevice.self,
                .init(userId: try request.userId, deviceId: try request.parameters.require("id")))
            return HTTPResponse(status: 204)
        }
        routes.add("GET", "/v1/notifications/preferences") { request in
            try .json(
                PreferencesShape(
                    push: try await notification.call(
                        Notifications.GetPushPreferences.self, .init(userId: try request.userId))))
        }
        routes.add("PATCH", "/v1/notifications/preferences", json: true) { try await updatePreferences($0) }
    }

    /// An APNs device token as sent: hex digits of either case, an even number of them, 16...200
    /// (APNs tokens are 64 today; Apple says the length may change). - Returns: it in lowercase,
    /// nil when it is not one.
    static func deviceToken(_ text: String) -> String? {
        let digits = text.utf8
        guard (16...200).contains(digits.count), digits.count % 2 == 0,
            digits.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        return text.lowercased()
    }

    /// `POST /v1/devices` `{platform: "ios", token, environment}` → 201 `{id, platform,
    /// environment, createdAt}`, registered with the caller's session (logout removes it).
    /// - Throws: 400 naming `platform` (not `ios`), `token` (not 16...200 hex digits, even),
    ///   `environment` (not `sandbox` or `production`), or an unknown member.
    func registerDevice(_ request: Request) async throws -> HTTPResponse {
        let body = try request.body()
        try body.allowOnly(["platform", "token", "environment"])
        guard try body.string("platform") == "ios" else { throw Problem.invalidField("platform", "must be \"ios\"") }
        guard let token = Self.deviceToken(try body.string("token")) else {
            throw Problem.invalidField("token", "must be an APNs device token: 16 to 200 hex digits, an even number")
        }
        let environment = try body.string("environment")
        guard Self.environments.contains(environment) else {
            throw Problem.invalidField("environment", "must be \"sandbox\" or \"production\"")
        }
        guard let session = request.session else { throw Problem.unauthorized("unauthorized", "authentication is required") }
        let device = try await notification.call(
            Notifications.RegisterDevice.self,
            .init(userId: session.userId, sessionId: session.sessionId, token: token, environment: environment))
        return try .json(201, device)
    }

    /// `PATCH /v1/notifications/preferences` `{push: {like?, follow?, comment?, tag?, post?}}`
    /// (any subset) → all of them.
    /// - Throws: 400 naming `push` (missing, `required`; or not an object) or `push.<name>`
    ///   (unknown, or not a boolean).
    func updatePreferences(_ request: Request) async throws -> HTTPResponse {
        let body = try request.body()
        try body.allowOnly(["push"])
        var change = Notifications.UpdatePushPreferences.Request(userId: try request.userId)
        switch body.object["push"] {
        case nil:
            // An empty PATCH changes nothing and most likely lost its body on the way.
            throw Problem.invalidField("push", "is required", code: "required")
        case .object(let push)?:
            for member in push.members {
                guard Self.pushTypes.contains(member.name) else { throw Problem.unknownField("push.\(member.name)") }
                guard case .bool(let on) = member.value else {
                    throw Problem.invalidField("push.\(member.name)", "must be true or false")
                }
                switch member.name {
                case "like": change.like = on
                case "follow": change.follow = on
                case "comment": change.comment = on
                case "tag": change.tag = on
                default: change.post = on
                }
            }
        default: throw Problem.invalidField("push", "must be an object of booleans: like, follow, comment, tag, post")
        }
        return try .json(
            PreferencesShape(push: try await notification.call(Notifications.UpdatePushPreferences.self, change)))
    }
}

/// `{push: {like, follow, comment, tag, post}}`: which notification types are pushed.
struct PreferencesShape: Encodable {
    var push: Notifications.PushPreferences
}
