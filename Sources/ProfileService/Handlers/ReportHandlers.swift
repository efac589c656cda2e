import BackendKit
import Foundation
import Messages
import Wire

/// Reports and moderation (API.md "Account lifecycle and moderation"): `profile.create_report`,
/// `profile.list_reports`, `profile.resolve_report`, `profile.set_suspension`,
/// `profile.report_stats`. Whether the caller may moderate is the gateway's check (AuthService
/// owns the role, and carries it on `auth.validate`); this service trusts the moderator id it
/// is given, as it trusts every user id the gateway passes.
struct ReportHandlers: Sendable {
    let users: any ProfileStore
    let reports: any ReportStore
    let effects: ModerationEffects
    /// Reports an account may file within an hour (`PROFILE_REPORTS_PER_HOUR`).
    let reportsPerHour: Int

    func register(on host: ServiceHost) {
        host.on(Profile.CreateReport.self) { request, context in try await create(request, context) }
        host.on(Profile.ListReports.self) { request, _ in
            guard request.status == "open" || request.status == "resolved" else {
                throw ServiceError.validation([
                    FieldError(field: "status", .invalidField, message: "must be open or resolved")
                ])
            }
            return try await reports.reports(
                resolved: request.status == "resolved", moderatorId: request.moderatorId, page: request.page)
        }
        host.on(Profile.ResolveReport.self) { request, context in try await resolve(request, context) }
        host.on(Profile.SetSuspension.self) { request, context in try await setSuspension(request, context) }
        host.on(Profile.ReportStats.self) { _, _ in try await reports.stats(nowMs: Timestamp.nowMs()) }
    }

    /// Files a report, or answers the reporter's open one on the same target.
    /// - Throws: 400 with every field error, 404 for an unknown reporter or target, and what
    ///   `ReportStore.create` throws (403, 422 `cannot_report_self`, 429 `too_many_reports`).
    func create(_ request: Profile.CreateReport.Request, _ context: RequestContext) async throws
        -> Profile.CreateReport.Reply
    {
        let comment = ReportRules.freeText(request.comment, field: "comment")
        let errors = [
            ReportRules.targetType(request.targetType), ReportRules.targetId(request.targetId),
            ReportRules.reason(request.reason), comment.error,
        ].compactMap { $0 }
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        guard try await users.user(id: request.reporterId) != nil else { throw ServiceError.notFound("user") }
        // An account is read from the replica in the report's transaction: make sure it is there
        // (asking AuthService once when it is not).
        if request.targetType == "user", try await users.user(id: request.targetId) == nil {
            throw ServiceError.notFound("user")
        }
        let filed = try await reports.create(
            NewReport(
                id: RandomID.make(), reporterId: request.reporterId, targetType: request.targetType,
                targetId: request.targetId, reason: request.reason, comment: comment.text, createdMs: Timestamp.nowMs()),
            perHour: reportsPerHour)
        if filed.created {
            context.logger.info(
                "moderation.reported",
                metadata: [
                    "report.id": filed.report.id, "reporter.id": request.reporterId,
                    "target": "\(request.targetType):\(request.targetId)", "reason": request.reason,
                ])
        }
        return .init(report: filed.report, created: filed.created)
    }

    /// Resolves a report (and every open one on its target), then does the action's effect at
    /// once; an effect that fails now is retried (`ModerationEffects`), and the report answered
    /// as resolved either way: the decision is recorded.
    /// - Throws: 400 with field errors, 404, 422 `action_not_applicable`.
    func resolve(_ request: Profile.ResolveReport.Request, _ context: RequestContext) async throws -> Profile.Report {
        let note = ReportRules.freeText(request.note, field: "note")
        let errors = [ReportRules.action(request.action), note.error].compactMap { $0 }
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        let resolved = try await reports.resolve(
            reportId: request.reportId, moderatorId: request.moderatorId, action: request.action, note: note.text,
            nowMs: Timestamp.nowMs())
        if resolved.resolvedNow {
            context.logger.info(
                "moderation.resolved",
                metadata: [
                    "report.id": request.reportId, "moderator.id": request.moderatorId, "action": request.action,
                    "target": "\(resolved.report.target.type):\(resolved.report.target.id)",
                    "reports": "\(resolved.report.reportsOnTarget)",
                ])
        }
        for effect in resolved.effects { await effects.perform(effect) }
        return resolved.report
    }

    /// Suspends an account or lifts its suspension for a moderator: logged, then sent to
    /// AuthService. - Throws: 404 for an unknown username; AuthService's errors (a 503/504
    /// leaves the change queued: `ModerationEffects` sends it again).
    func setSuspension(_ request: Profile.SetSuspension.Request, _ context: RequestContext) async throws
        -> Auth.SetSuspension.Reply
    {
        guard let key = Username.lookupKey(request.username), let user = try await users.users(usernames: [key])[key] else {
            throw ServiceError.notFound("user")
        }
        let effect = try await reports.setSuspension(
            moderatorId: request.moderatorId, userId: user.id, suspended: request.suspended, nowMs: Timestamp.nowMs())
        context.logger.info(
            "moderation.suspension",
            metadata: ["moderator.id": request.moderatorId, "user.id": user.id, "suspended": "\(request.suspended)"])
        switch await effects.perform(effect) {
        case .done(let reply?): return reply
        case .done(nil): throw ServiceError.notFound("user")
        case .refused(let error), .failed(let error): throw error
        }
    }
}
