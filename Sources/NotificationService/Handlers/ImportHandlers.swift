import BackendKit
import Messages
import Wire

/// `notification.import_follows`: many followers of one followee in one transaction, without
/// notifications (see `Notifications.ImportFollows`); `notification.import_devices`. Both only
/// when the configuration allows imports (`Imports`, `ALLOW_IMPORTS`). Registered on
/// NotificationService's RPC endpoint only; the gateway has no route to either.
struct ImportHandlers: Sendable {
    /// Resolves the ids; its database is the service's.
    let replica: IdentityReplica
    /// Whether imports are served.
    let imports: Imports

    func register(on host: ServiceHost) {
        host.on(Notifications.ImportFollows.self) { request, context in try await importFollows(request, context) }
        host.on(Notifications.ImportDevices.self) { request, context in try await importDevices(request, context) }
    }

    /// Checks the request, resolves every id through the identity replica (AuthService for the
    /// ones it has not seen), then creates the missing edges (`FollowImport`).
    /// - Throws: 403 `imports_disabled` unless imports are allowed, 400 `invalid_request`, 404
    ///   `not_found` with the unknown ids as fields, 422 `cannot_follow_self`, 503/504 when
    ///   AuthService cannot answer a lookup.
    func importFollows(_ request: Notifications.ImportFollows.Request, _ context: RequestContext) async throws
        -> Notifications.ImportFollows.Reply
    {
        try imports.check(Notifications.ImportFollows.type)
        let limit = Notifications.ImportFollows.maxFollowers
        guard (1...limit).contains(request.followerIds.count) else {
            let message = "1 to \(limit) follower ids per request (got \(request.followerIds.count))"
            throw ServiceError.badRequest(
                "invalid_request", message,
                fields: [FieldError(field: "followerIds", .invalidRequest, message: message)])
        }
        if let i = request.followerIds.firstIndex(of: request.followeeId) {
            throw ServiceError(
                .cannotFollowSelf, message: "followerIds[\(i)] is the followee", status: 422,
                fields: [
                    FieldError(field: "followerIds[\(i)]", .cannotFollowSelf, message: "is the followee")
                ])
        }
        var seen = Set<String>()
        let followers = request.followerIds.filter { seen.insert($0).inserted }
        let known = try await replica.identities(ids: followers + [request.followeeId])
        let unknown =
            (known[request.followeeId] == nil ? [("followeeId", request.followeeId)] : [])
            + request.followerIds.enumerated().filter { known[$0.element] == nil }.map {
                ("followerIds[\($0.offset)]", $0.element)
            }
        if !unknown.isEmpty {
            throw ServiceError(
                .notFound,
                message: "\(unknown.count) unknown user(s): "
                    + unknown.prefix(5).map { "\($0.0) \($0.1)" }.joined(separator: ", "),
                status: 404,
                fields: unknown.prefix(100).map { FieldError(field: $0.0, .notFound, message: "no user \($0.1)") })
        }
        let followee = (key: known[request.followeeId]!.key, id: request.followeeId)
        let pairs = followers.map { (key: known[$0]!.key, id: $0) }
        let (notifyPosts, now) = (request.notifyPosts, Timestamp.nowMs())
        let created = try await replica.database.write { tx in
            try FollowImport.importFollows(
                followee: followee, followers: pairs, notifyPosts: notifyPosts, nowMs: now, in: tx)
        }
        context.logger.info(
            "notification.follows_imported",
            metadata: [
                "followee.id": followee.id, "follows.created": "\(created.count)", "follows.requested": "\(followers.count)",
            ])
        return .init(created: created.count)
    }

    /// Checks the request, resolves every user id through the identity replica, then inserts the
    /// devices whose tokens are not registered yet, in one transaction (`DeviceStore.importDevices`).
    /// - Throws: 403 `imports_disabled` unless imports are allowed, 400 `invalid_request` /
    ///   `invalid_field`, 404 `not_found` with the unknown ids as fields, 503/504 when AuthService
    ///   cannot answer a lookup.
    func importDevices(_ request: Notifications.ImportDevices.Request, _ context: RequestContext) async throws
        -> Notifications.ImportDevices.Reply
    {
        try imports.check(Notifications.ImportDevices.type)
        let limit = Notifications.ImportDevices.maxDevices
        guard (1...limit).contains(request.devices.count) else {
            let message = "1 to \(limit) devices per request (got \(request.devices.count))"
            throw ServiceError.badRequest(
                "invalid_request", message, fields: [FieldError(field: "devices", .invalidRequest, message: message)])
        }
        var errors: [FieldError] = []
        for (i, d) in request.devices.enumerated() {
            if !DeviceStore.isStoredToken(d.token) {
                errors.append(
                    .init(field: "devices[\(i)].token", .invalidField, message: "must be 16 to 200 lowercase hex digits, even"))
            }
            if !DeviceStore.environments.contains(d.environment) {
                errors.append(.init(field: "devices[\(i)].environment", .invalidField, message: "must be sandbox or production"))
            }
            if d.sessionId.isEmpty {
                errors.append(.init(field: "devices[\(i)].sessionId", .invalidField, message: "must be the device's session"))
            }
            if let installation = d.installationId, !DeviceStore.isInstallationId(installation) {
                errors.append(
                    .init(field: "devices[\(i)].installationId", .invalidField, message: "must be a UUID in lowercase"))
            }
        }
        guard errors.isEmpty else { throw ServiceError.validation(Array(errors.prefix(100))) }
        let known = try await replica.identities(ids: Array(Set(request.devices.map(\.userId))))
        let unknown = request.devices.enumerated().filter { known[$0.element.userId] == nil }
        if !unknown.isEmpty {
            throw ServiceError(
                .notFound, message: "\(unknown.count) device(s) of unknown users", status: 404,
                fields: unknown.prefix(100).map {
                    FieldError(field: "devices[\($0.offset)].userId", .notFound, message: "no user \($0.element.userId)")
                })
        }
        let rows = request.devices.map {
            (
                userKey: known[$0.userId]!.key, sessionId: $0.sessionId, token: $0.token, environment: $0.environment,
                installationId: $0.installationId
            )
        }
        let now = Timestamp.nowMs()
        let created = try await replica.database.write { tx in try DeviceStore.importDevices(rows, nowMs: now, in: tx) }
        context.logger.info(
            "notification.devices_imported",
            metadata: ["devices.created": "\(created)", "devices.requested": "\(rows.count)"])
        return .init(created: created)
    }
}
