import BackendKit
import Messages
import Wire

/// A recipient's notifications: `notification.list`, `notification.since`, `notification.mark_read`,
/// `notification.list_groups`, `notification.unread_count`, and what
/// gateways need for routed delivery: `notification.stream_start`, `notification.heads`.
struct NotificationHandlers: Sendable {
    let store: any NotificationStore

    func register(on host: ServiceHost) {
        host.on(Notifications.ListNotifications.self) { request, _ in try await list(request) }
        host.on(Notifications.NotificationsSince.self) { request, _ in try await since(request) }
        host.on(Notifications.MarkRead.self) { request, _ in try await markRead(request) }
        host.on(Notifications.ListGroups.self) { request, _ in
            try await store.groups(recipientId: request.recipientId, page: request.page)
        }
        host.on(Notifications.UnreadCount.self) { request, _ in
            .init(unreadCount: try await store.unreadCount(recipientId: request.recipientId))
        }
        host.on(Notifications.StreamStart.self) { request, _ in try await streamStart(request) }
        host.on(Notifications.Heads.self) { request, _ in try await heads(request) }
    }

    /// A page of notifications, newest first, with the unread count. - Throws: 400 `invalid_cursor`.
    func list(_ request: Notifications.ListNotifications.Request) async throws -> Notifications.ListNotifications.Reply {
        try await store.list(recipientId: request.recipientId, page: request.page)
    }

    /// Everything after `afterSeq`, oldest first, and the head seq.
    func since(_ request: Notifications.NotificationsSince.Request) async throws -> Notifications.NotificationsSince.Reply {
        try await store.since(recipientId: request.recipientId, afterSeq: request.afterSeq, limit: request.limit)
    }

    /// Moves the read mark to `upToSeq`, or to the head with `all` (never back, never past the head).
    func markRead(_ request: Notifications.MarkRead.Request) async throws -> Notifications.MarkRead.Reply {
        .init(
            unreadCount: try await store.markRead(
                recipientId: request.recipientId, upToSeq: request.all == true ? nil : request.upToSeq))
    }

    /// The recipient's key (its delivery topic) and head seq.
    func streamStart(_ request: Notifications.StreamStart.Request) async throws -> Notifications.StreamStart.Reply {
        try await store.streamStart(recipientId: request.recipientId)
    }

    /// Each recipient's head seq. - Throws: 400 `invalid_field` for more than `Notifications.Heads.maxKeys`.
    func heads(_ request: Notifications.Heads.Request) async throws -> Notifications.Heads.Reply {
        guard request.recipientKeys.count <= Notifications.Heads.maxKeys else {
            throw ServiceError.validation([
                .init(field: "recipientKeys", .tooMany, message: "at most \(Notifications.Heads.maxKeys) keys")
            ])
        }
        return .init(heads: try await store.heads(recipientKeys: request.recipientKeys))
    }
}
