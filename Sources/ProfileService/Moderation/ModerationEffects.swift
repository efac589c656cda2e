import Messages
import ServiceKit
import Support
import Wire

/// Does what a moderation action changes outside the reports' own transaction, through the
/// owners' own paths so counts and notifications follow: a removed post goes through
/// `PostStore.delete` as its owner (its likes, comments, tags, media and `profile.post.deleted`),
/// a removed comment through the comment deletion as its author, a suspension (or its lifting)
/// through AuthService's `auth.set_suspension`.
///
/// Each effect is queued in `moderation_effects` in the transaction that logs its action
/// (`ReportStore.resolve`, `setSuspension`), tried at once by the handler that queued it, and
/// deleted when done. What failed (AuthService down, a crash between the commit and the try) is
/// tried again by `run()` (in the active replica only) from `effectGraceMs` after the action, then
/// with a back-off doubling from 2 s to 5 minutes, until it is done. Every effect is idempotent:
/// a post or comment already gone (404) or an account unknown to AuthService (404) counts as done,
/// and a suspension sent twice changes nothing. Any other refusal (4xx) is logged
/// (`moderation.effect_refused`) and not tried again; failures to reach or hear from the owner
/// (5xx), and `unknown_type` from an AuthService older than `auth.set_suspension` (a rolling
/// upgrade), are.
struct ModerationEffects: Service {
    let reports: any ReportStore
    let posts: any PostStore
    /// Deletes comment `commentId` of post `postId` as its author `authorId` would.
    /// - Throws: `ServiceError` 404 when the post or comment is gone.
    let removeComment: @Sendable (_ postId: String, _ commentId: String, _ authorId: String) async throws -> Void
    let auth: RPCClient
    let logger: Logger
    /// Told after a post is deleted (its upload may be unused now).
    var released: @Sendable () async -> Void = {}
    /// ms between looks at the queue.
    var intervalMs = 2_000

    func run() async {
        while !Task.isCancelled {
            await retryDue(nowMs: Timestamp.nowMs())
            try? await Task.sleep(for: .milliseconds(intervalMs))
        }
    }

    /// Tries every effect due at `nowMs`, oldest first. - Returns: how many were done.
    @discardableResult
    func retryDue(nowMs: Int64) async -> Int {
        do {
            var done = 0
            for effect in try await reports.dueEffects(nowMs: nowMs, limit: 100) where !Task.isCancelled {
                if case .done = await perform(effect) { done += 1 }
            }
            return done
        } catch {
            logger.warning("moderation.effects_failed", metadata: ["error": "\(error)"])
            return 0
        }
    }

    /// What trying an effect came to.
    enum Outcome: Sendable {
        /// Done (or nothing left to do); for a suspension, AuthService's reply (nil when the
        /// account was gone).
        case done(Auth.SetSuspension.Reply?)
        /// Refused for good: not tried again.
        case refused(ServiceError)
        /// Not done: tried again after a back-off.
        case failed(ServiceError)
    }

    /// Tries one effect; done or refused, it leaves the queue, else it is due again after a
    /// back-off.
    @discardableResult
    func perform(_ effect: ModerationEffect) async -> Outcome {
        var failure: ServiceError? = nil
        var outcome = Outcome.done(nil)
        do {
            outcome = .done(try await apply(effect))
        } catch let error as ServiceError where error.status == 404 {
            // Already gone: the owner deleted it, another moderator's effect did, or the account is.
            logger.info(
                "moderation.effect_target_gone", metadata: ["kind": effect.kind.rawValue, "user.id": effect.userId])
        } catch let error as ServiceError
            where (400..<500).contains(error.status) && ![408, 429].contains(error.status)
            && error.errorCode != .unknownType
        {
            // Refused for good (trying again would get the same answer): logged, not retried.
            logger.error(
                "moderation.effect_refused",
                metadata: ["kind": effect.kind.rawValue, "user.id": effect.userId, "error": error.code])
            outcome = .refused(error)
        } catch let error as ServiceError {
            failure = error
        } catch {
            failure = ServiceError.internal("\(error)")
        }
        do {
            if let failure {
                let backoff = min(Int64(2_000) << Int64(min(effect.attempts, 8)), 300_000)
                try await reports.effectFailed(seq: effect.seq, retryAtMs: Timestamp.nowMs() + backoff)
                logger.warning(
                    "moderation.effect_retry",
                    metadata: [
                        "kind": effect.kind.rawValue, "user.id": effect.userId, "error": failure.code,
                        "retry.ms": "\(backoff)",
                    ])
            } else {
                try await reports.effectDone(seq: effect.seq)
                logger.info("moderation.effect_done", metadata: ["kind": effect.kind.rawValue, "user.id": effect.userId])
            }
        } catch {
            logger.warning("moderation.effect_not_recorded", metadata: ["error": "\(error)"])
        }
        return failure.map { .failed($0) } ?? outcome
    }

    /// - Returns: AuthService's reply for a suspension, nil otherwise.
    private func apply(_ effect: ModerationEffect) async throws -> Auth.SetSuspension.Reply? {
        switch effect.kind {
        case .removePost:
            guard let postId = effect.targetId else { return nil }
            try await posts.delete(id: postId, by: effect.userId)
            await released()
            return nil
        case .removeComment:
            guard let commentId = effect.targetId, let postId = effect.postId else { return nil }
            try await removeComment(postId, commentId, effect.userId)
            return nil
        case .suspend, .reinstate:
            return try await auth.call(
                Auth.SetSuspension.self,
                .init(userId: effect.userId, suspended: effect.kind == .suspend, moderatorId: effect.moderatorId))
        }
    }
}
