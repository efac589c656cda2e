import Foundation
import Messages

/// Devices and push preferences (API.md "Devices and push", NotificationService): the caller's
/// APNs device tokens and which notification types are pushed to them.
struct DevicesController: Controller {
    let notification: any ServiceBackend

    /// The API's `environment` values.
    static let environments: Set<String> = ["sandbox", "production"]
    /// The preference names of `{push: {...}}`.
    static let pushTypes = ["like", "follow", "comment", "tag", "post"]

    func register(_ routes: inout RouteCollection) {
        routes.add(.post, "/v1/devices", body: .json) { try await registerDevice($0) }
        routes.add(.get, "/v1/devices") { request in
            try .json(
                try await notification.call(
                    Notifications.ListDevices.self, .init(userId: try request.userId, page: try request.page())))
        }
        routes.add(.delete, "/v1/devices/{id}") { request in
            _ = try await notification.call(
                Notifications.DeleteDevice.self,
                .init(userId: try request.userId, deviceId: try request.parameters.require("id")))
            return HTTPResponse(status: 204)
        }
        routes.add(.get, "/v1/notifications/preferences") { request in
            try .json(
                PreferencesShape(
                    push: try await notification.call(
                        Notifications.GetPushPreferences.self, .init(userId: try request.userId))))
        }
        routes.add(.patch, "/v1/notifications/preferences", body: .json) { try await updatePreferences($0) }
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

    /// `POST /v1/devices` `{platform: "ios", token, environment, installationId}` → 201 `{id,
    /// platform, environment, createdAt}`, registered with the caller's session (logout removes
    /// it) and the app installation (a token another account holds moves only from the same
    /// one: API.md "Devices and push").
    /// - Throws: 400 naming `platform` (not `ios`), `token` (not 16...200 hex digits, even),
    ///   `environment` (not `sandbox` or `production`), `installationId` (missing, or not a
    ///   UUID), or an unknown member; from NotificationService 401 (the session ended), 409
    ///   `device_token_in_use`, 429.
    func registerDevice(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(DeviceBody.self)
        guard let session = request.session else { throw Problem.unauthorized(.unauthorized, "authentication is required") }
        let device = try await notification.call(
            Notifications.RegisterDevice.self,
            .init(
                userId: session.userId, sessionId: session.sessionId, token: body.token, environment: body.environment,
                installationId: body.installationId))
        return try .json(201, device)
    }

    /// `PATCH /v1/notifications/preferences` `{push: {like?, follow?, comment?, tag?, post?}}`
    /// (any subset) → all of them.
    /// - Throws: 400 naming `push` (missing, `required`; or not an object) or `push.<name>`
    ///   (unknown, or not a boolean).
    func updatePreferences(_ request: Request) async throws -> HTTPResponse {
        let push = try request.decode(PreferencesBody.self).push
        var change = Notifications.UpdatePushPreferences.Request(userId: try request.userId)
        change.like = push.like
        change.follow = push.follow
        change.comment = push.comment
        change.tag = push.tag
        change.post = push.post
        return try .json(
            PreferencesShape(push: try await notification.call(Notifications.UpdatePushPreferences.self, change)))
    }

    /// `POST /v1/devices`'s body `{platform: "ios", token, environment, installationId}`,
    /// checked as it is read: each member's error before the next member is looked at.
    struct DeviceBody: Decodable {
        /// The APNs device token, in lowercase.
        var token: String
        /// `sandbox` or `production`.
        var environment: String
        /// The app installation's UUID (RFC 9562; iOS writes them in capitals), in lowercase.
        var installationId: String

        enum CodingKeys: String, CodingKey { case platform, token, environment, installationId }

        /// - Throws: 400 naming `platform` (not `ios`), `token` (not 16...200 hex digits, even),
        ///   `environment` (not `sandbox` or `production`), `installationId` (missing, or not a
        ///   UUID), or an unknown member.
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            guard try c.decode(String.self, forKey: .platform) == "ios" else {
                throw Problem.invalidField("platform", "must be \"ios\"")
            }
            guard let token = DevicesController.deviceToken(try c.decode(String.self, forKey: .token)) else {
                throw Problem.invalidField("token", "must be an APNs device token: 16 to 200 hex digits, an even number")
            }
            let environment = try c.decode(String.self, forKey: .environment)
            guard DevicesController.environments.contains(environment) else {
                throw Problem.invalidField("environment", "must be \"sandbox\" or \"production\"")
            }
            guard let installation = UUID(uuidString: try c.decode(String.self, forKey: .installationId)) else {
                throw Problem.invalidField("installationId", "must be a UUID (the one the app made at its installation)")
            }
            self.token = token
            self.environment = environment
            installationId = installation.uuidString.lowercased()
        }
    }

    /// `PATCH /v1/notifications/preferences`'s body `{push: {like?, follow?, comment?, tag?,
    /// post?}}`: the types given are switched on or off, the others left as they are.
    struct PreferencesBody: Decodable {
        var push: PushChanges

        /// The push preferences to change (nil: left as it is).
        struct PushChanges: Decodable {
            var like: Bool?
            var follow: Bool?
            var comment: Bool?
            var tag: Bool?
            var post: Bool?

            /// Reads the members in the body's order, each name checked before its value.
            /// - Throws: 400 `unknown_field` naming `push.<name>`, 400 `invalid_field` naming
            ///   `push` (not an object) or `push.<name>` (not a boolean).
            init(from decoder: any Decoder) throws {
                let field = RequestBodyDecoder.fieldName(decoder.codingPath)
                guard let c = try? decoder.container(keyedBy: MemberName.self) else {
                    throw Problem.invalidField(field, "must be an object of booleans: like, follow, comment, tag, post")
                }
                for key in c.allKeys {
                    guard DevicesController.pushTypes.contains(key.stringValue) else {
                        throw Problem.unknownField("\(field).\(key.stringValue)")
                    }
                    guard let on = try c.decodeIfPresent(Bool.self, forKey: key) else {
                        throw Problem.invalidField("\(field).\(key.stringValue)", "must be true or false")
                    }
                    switch key.stringValue {
                    case "like": like = on
                    case "follow": follow = on
                    case "comment": comment = on
                    case "tag": tag = on
                    default: post = on
                    }
                }
            }
        }

        enum CodingKeys: String, CodingKey { case push }

        /// - Throws: 400 `unknown_field`; 400 `invalid_field` naming `push` when it is missing
        ///   (`required`: an empty PATCH changes nothing and most likely lost its body on the
        ///   way), or what `PushChanges` throws.
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            guard c.contains(.push) else { throw Problem.invalidField("push", "is required", code: .required) }
            push = try c.decode(PushChanges.self, forKey: .push)
        }
    }
}
