import BackendKit
import Messages
import Storage
import Support
import Wire

/// `profile.apply_account_state` (the gateway's copy of a state AuthService just changed) and
/// the same from AuthService's `auth.account.state_changed` events (`AccountStates`).
struct AccountStateHandlers: Sendable {
    let database: Database
    /// Rung when an erasure may have begun (`AccountEraser` waits on it).
    let erasures: Doorbell

    func register(on host: ServiceHost) {
        host.on(Profile.ApplyAccountState.self) { request, _ in
            let changed = try await database.write { tx in
                try AccountStates.apply(
                    userId: request.userId, state: request.state, version: request.version, nowMs: Timestamp.nowMs(),
                    in: tx)
            }
            if changed && request.state == .deleting { erasures.ring() }
            return Empty()
        }
    }

    func subscribe(_ subscriber: EventSubscriber) {
        let erasures = self.erasures
        AccountStates.subscribe(subscriber) { erasures.ring() }
    }
}
