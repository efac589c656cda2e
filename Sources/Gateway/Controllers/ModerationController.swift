import Messages
import Wire

/// Reports and moderation (API.md "Account lifecycle and moderation"; ProfileService owns
/// reports and the moderation log, AuthService the moderator role): `POST /v1/reports` for
/// everyone, and for moderators only `GET /v1/moderation/reports`,
/// `POST /v1/moderation/reports/{id}/resolve` and `PUT`/`DELETE
/// /v1/moderation/users/{username}/suspension`; anyone else gets 403 `forbidden` there.
///
/// The role is checked with AuthService on every moderation request (`auth.validate` answers
/// it), not from the token cache, so a role revoked by the operator is gone at the next
/// request; it is checked before anything else of the request, so a non-moderator learns
/// nothing from it but 403.
struct ModerationController: Controller {
    let auth: any ServiceBackend
    let profile: any ServiceBackend

    func register(_ routes: inout RouteCollection) {
        routes.add(.post, "/v1/reports", body: .json) { try await report($0) }
        routes.add(.get, "/v1/moderation/reports") { try await reports($0) }
        routes.add(.post, "/v1/moderation/reports/{id}/resolve", body: .json) { try await resolve($0) }
        for suspended in [true, false] {
            routes.add(suspended ? .put : .delete, "/v1/moderation/users/{username}/suspension") { request in
                let moderator = try await requireModerator(request)
                _ = try await profile.call(
                    Profile.SetSuspension.self,
                    .init(
                        moderatorId: moderator, username: try request.parameters.require("username"), suspended: suspended))
                return HTTPResponse(status: 204)
            }
        }
    }

    /// The caller's user id when their session holds the moderator role, asked of AuthService.
    /// - Throws: `Problem` 403 `forbidden` for anyone else, 401 when the session ended
    ///   meanwhile, AuthService's 503/504.
    func requireModerator(_ request: Request) async throws -> String {
        guard let session = request.session else {
            throw Problem.unauthorized(.unauthorized, "authentication is required")
        }
        let validated: Auth.Validate.Reply
        do {
            validated = try await auth.call(Auth.Validate.self, .init(token: session.token))
        } catch let error as ServiceError where error.status == 401 || error.status == 404 {
            throw Problem.unauthorized(.invalidToken, "the token is unknown, expired or logged out")
        }
        guard validated.moderator else {
            throw Problem(status: 403, code: .service(.forbidden), detail: "only moderators may do this")
        }
        return validated.userId
    }

    /// `POST /v1/reports` `{target: {type, id}, reason, comment?}` → 201 `Report`, or 200 with the
    /// caller's open report on the same target.
    func report(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(ReportBody.self)
        let filed = try await profile.call(
            Profile.CreateReport.self,
            .init(
                reporterId: try request.userId, targetType: body.target.type, targetId: body.target.id, reason: body.reason,
                comment: body.comment))
        return try .json(filed.created ? 201 : 200, filed.report)
    }

    /// `GET /v1/moderation/reports?status=open|resolved` (default `open`), oldest first.
    func reports(_ request: Request) async throws -> HTTPResponse {
        let moderator = try await requireModerator(request)
        let status = request.query["status"] ?? "open"
        guard status == "open" || status == "resolved" else {
            throw Problem.invalidField("status", "must be open or resolved")
        }
        let page = try request.page()
        return try .json(
            try await profile.call(Profile.ListReports.self, .init(moderatorId: moderator, status: status, page: page)))
    }

    /// `POST /v1/moderation/reports/{id}/resolve` `{action, note?}` → the `Report` (as the first
    /// resolution left it, when another moderator resolved it first).
    func resolve(_ request: Request) async throws -> HTTPResponse {
        let moderator = try await requireModerator(request)
        let body = try request.decode(ResolveBody.self)
        return try .json(
            try await profile.call(
                Profile.ResolveReport.self,
                .init(
                    reportId: try request.parameters.require("id"), moderatorId: moderator, action: body.action,
                    note: body.note)))
    }

    /// `POST /v1/reports`'s body.
    struct ReportBody: Decodable {
        /// `{type, id}`.
        struct Target: Decodable {
            var type: String
            var id: String
        }
        var target: Target
        var reason: String
        var comment: String?
    }

    /// `POST /v1/moderation/reports/{id}/resolve`'s body.
    struct ResolveBody: Decodable {
        var action: String
        var note: String?
    }
}
