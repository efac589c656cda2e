import BackendKit
import Messages
import Storage
import Wire

/// NotificationService's part of the account lifecycle (API.md "Account lifecycle and
/// moderation", the saga on `Auth`): `notification.apply_account_state` (the gateway, as soon as
/// AuthService answered), `auth.account.state_changed` (the same state, later, from AuthService's
/// outbox: whichever comes second with a version not newer changes nothing) and
/// `profile.account.erased` (step 3 of the deletion saga: `AccountWorker` erases the account and
/// emits `notification.account.erased`).
struct AccountHandlers: Sendable {
    let database: Database
    let worker: AccountWorker

    func register(on host: ServiceHost) {
        host.on(Notifications.ApplyAccountState.self) { request, _ in
            try await apply(request)
            return Empty()
        }
    }

    /// Applies `request`'s state (`AccountStates.apply`), waking the worker when it changed.
    /// - Throws: `DatabaseError`.
    func apply(_ request: AccountStateRequest) async throws {
        let worker = self.worker
        try await database.write { tx in
            if try AccountStates.apply(
                userId: request.userId, state: request.state, version: request.version, nowMs: Timestamp.nowMs(), in: tx)
            {
                worker.wakeOnCommit(tx)
            }
        }
    }

    /// Registers the handler of `auth.account.state_changed` on the subscriber to AuthService.
    func subscribeAuth(_ subscriber: EventSubscriber) {
        let worker = self.worker
        subscriber.on(Auth.AccountStateChanged.self) { event, tx in
            let e = event.body
            if try AccountStates.apply(
                userId: e.userId, state: e.state, version: e.version, nowMs: Timestamp.parse(e.at) ?? Timestamp.nowMs(),
                in: tx)
            {
                worker.wakeOnCommit(tx)
            }
            return .applied
        }
    }

    /// Registers the handler of `profile.account.erased` on the subscriber to ProfileService: the
    /// account is marked erased and its erasure queued, in the event's transaction.
    func subscribeProfile(_ subscriber: EventSubscriber) {
        let worker = self.worker
        subscriber.on(Profile.AccountErased.self) { event, tx in
            if try AccountStates.erase(userId: event.body.userId, nowMs: Timestamp.nowMs(), in: tx) {
                worker.wakeOnCommit(tx)
            }
            return .applied
        }
    }
}
