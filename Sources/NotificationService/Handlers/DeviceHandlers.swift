import BackendKit
import Messages
import Wire

/// Devices and push preferences (API.md "Devices and push"): `notification.register_device`,
/// `notification.list_devices`, `notification.delete_device`,
/// `notification.get_push_preferences`, `notification.update_push_preferences`; and logout
/// (`auth.session.revoked`) removing the devices registered with the ended sessions.
struct DeviceHandlers: Sendable {
    let store: DeviceStore

    func register(on host: ServiceHost) {
        host.on(Notifications.RegisterDevice.self) { request, _ in try await store.register(request) }
        host.on(Notifications.ListDevices.self) { request, _ in
            try await store.list(userId: request.userId, page: request.page)
        }
        host.on(Notifications.DeleteDevice.self) { request, _ in
            try await store.delete(userId: request.userId, deviceId: request.deviceId)
            return Empty()
        }
        host.on(Notifications.GetPushPreferences.self) { request, _ in try await store.preferences(userId: request.userId) }
        host.on(Notifications.UpdatePushPreferences.self) { request, _ in try await store.updatePreferences(request) }
    }

    /// Applies `auth.session.revoked` in the subscriber's transaction (`DeviceStore.revoke`): the
    /// devices registered with those sessions go, with their queued pushes, and the sessions are
    /// remembered as ended until they would have expired (31 days when an older AuthService did
    /// not say: longer than its default session lifetime), so no device registers with them.
    func subscribe(_ subscriber: EventSubscriber) {
        let clock = store.clock
        subscriber.on(Auth.SessionRevoked.self) { event, tx in
            // An erased account has no devices left, and keeps no ended sessions.
            if try AccountStates.isErased(id: event.body.userId, on: tx.connection) { return .applied }
            let now = clock()
            let until = event.body.expiresAt.flatMap(Timestamp.parse) ?? now + 31 * 86_400_000
            try DeviceStore.revoke(
                userId: event.body.userId, sessionIds: event.body.sessionIds, until: until, now: now, in: tx)
            return .applied
        }
    }
}
