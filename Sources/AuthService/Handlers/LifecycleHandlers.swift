import BackendKit
import Messages
import Support
import Wire

/// `auth.change_password`, `auth.delete_account`, `auth.set_suspension`, `auth.account_states`,
/// and the last step of the deletion saga (`notification.account.erased`).
struct LifecycleHandlers: Sendable {
    let lifecycle: any AccountLifecycleStore
    let hasher: PasswordHasher
    let throttle: LoginThrottle
    let clock: Clock

    /// A wrong current password (API.md: 403 `invalid_credentials`, not 401: the caller's
    /// session is valid).
    static let wrongPassword = ServiceError(.invalidCredentials, message: "the password is wrong", status: 403)

    func register(on host: ServiceHost) {
        host.on(Auth.ChangePassword.self) { request, context in try await changePassword(request, context) }
        host.on(Auth.DeleteAccount.self) { request, context in try await deleteAccount(request, context) }
        host.on(Auth.SetSuspension.self) { request, context in try await setSuspension(request, context) }
        host.on(Auth.AccountStates.self) { request, _ in
            Auth.AccountStates.Reply(states: try await lifecycle.states(userIds: request.userIds))
        }
    }

    /// The saga's last step: applied from NotificationService's events.
    /// Logs `account.deleted` with the deletion's duration (`took_ms`, from the 202) when done.
    static func subscribe(_ subscriber: EventSubscriber, clock: Clock, logger: Logger) {
        subscriber.on(Notifications.AccountErased.self) { event, tx in
            let userId = event.body.userId
            if let took = try SQLAccountLifecycleStore.finishDeletion(userId: userId, now: clock.now(), in: tx) {
                logger.info("account.deleted", metadata: ["user.id": userId, "took_ms": "\(took)"])
            }
            return .applied
        }
    }

    /// The active account `userId` after checking `password` against it, throttled as a login
    /// from `clientAddress` is.
    /// - Throws: 404 when the account is not active, 403 `invalid_credentials`, 429.
    private func verified(
        userId: String, password: String, clientAddress: String?, allowDeleting: Bool, _ context: RequestContext
    ) async throws -> AccountCredentials {
        guard let account = try await lifecycle.credentials(userId: userId),
            account.state == .active || (allowDeleting && account.state == .deleting)
        else { throw ServiceError.notFound("user") }
        guard password.utf8.count <= PasswordHasher.maxPasswordBytes else { throw Self.wrongPassword }
        let key = LoginThrottle.key(accountId: userId, login: "", clientAddress: clientAddress)
        try await throttle.attempt(key, failure: Self.wrongPassword) {
            guard try await hasher.verify(password, against: account.passwordHash, deadline: context.deadline) else {
                context.logger.info("auth.password_check_failed", metadata: ["user.id": userId])
                throw Self.wrongPassword
            }
        }
        return account
    }

    /// Checks the current password, hashes the new one (the registration rules, field
    /// `newPassword`) and stores it, ending every other session.
    /// - Throws: 400 with field `newPassword`, 403 `invalid_credentials`, 404, 429, 503 `busy`.
    func changePassword(_ request: Auth.ChangePassword.Request, _ context: RequestContext) async throws
        -> Auth.ChangePassword.Reply
    {
        if var error = IdentityRules.password(request.newPassword) {
            error.field = "newPassword"
            throw ServiceError.identityValidation([error])
        }
        _ = try await verified(
            userId: request.userId, password: request.currentPassword, clientAddress: request.clientAddress,
            allowDeleting: false, context)
        let hash = try await hasher.hash(request.newPassword, deadline: context.deadline)
        let revoked = try await lifecycle.changePassword(
            userId: request.userId, passwordHash: hash, keeping: request.sessionId, now: clock.now())
        context.logger.info("auth.password_changed", metadata: ["user.id": request.userId])
        return Auth.ChangePassword.Reply(revokedSessionIds: revoked)
    }

    /// Checks the password and starts the deletion (or answers the one under way).
    /// - Throws: 403 `invalid_credentials`, 404, 429, 503 `busy`.
    func deleteAccount(_ request: Auth.DeleteAccount.Request, _ context: RequestContext) async throws
        -> Auth.DeleteAccount.Reply
    {
        _ = try await verified(
            userId: request.userId, password: request.password, clientAddress: request.clientAddress,
            allowDeleting: true, context)
        let (version, startedAt, revoked) = try await lifecycle.beginDeletion(userId: request.userId, now: clock.now())
        context.logger.info("auth.deletion_started", metadata: ["user.id": request.userId, "version": "\(version)"])
        return Auth.DeleteAccount.Reply(
            status: .deleting, version: version, startedAt: Timestamp.format(ms: startedAt), revokedSessionIds: revoked)
    }

    /// Suspends or restores an account.
    /// - Throws: 404 when the account does not exist or is being deleted.
    func setSuspension(_ request: Auth.SetSuspension.Request, _ context: RequestContext) async throws
        -> Auth.SetSuspension.Reply
    {
        let reply = try await lifecycle.setSuspension(
            userId: request.userId, suspended: request.suspended, moderatorId: request.moderatorId, now: clock.now())
        context.logger.info(
            "auth.suspension_set",
            metadata: [
                "user.id": request.userId, "state": reply.state.rawValue, "moderator.id": request.moderatorId,
                "version": "\(reply.version)",
            ])
        return reply
    }
}
