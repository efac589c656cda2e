import Shared

/// A recipient's notifications: `notify.list`, `notify.since`, `notify.mark_read`.
struct NotificationHandlers: Sendable {
    let store: any NotificationStore

    func register(on host: ServiceHost) {
        host.on(Graph.ListNotifications.self) { request, _ in try await list(request) }
        host.on(Graph.NotificationsSince.self) { request, _ in try await since(request) }
        host.on(Graph.MarkRead.self) { request, _ in try await markRead(request) }
    }

    /// A page of notifications, newest first, with the unread count. - Throws: 400 `invalid_cursor`.
    func list(_ request: Graph.ListNotifications.Request) async throws -> Graph.ListNotifications.Reply {
        try await store.list(recipientId: request.recipientId, page: request.page)
    }

    /// Everything after `afterSeq`, oldest first, and the head seq.
    func since(_ request: Graph.NotificationsSince.Request) async throws -> Graph.NotificationsSince.Reply {
        try await store.since(recipientId: request.recipientId, afterSeq: request.afterSeq, limit: request.limit)
    }

    /// Moves the read mark (never back, never past the head).
    func markRead(_ request: Graph.MarkRead.Request) async throws -> Graph.MarkRead.Reply {
        .init(unreadCount: try await store.markRead(recipientId: request.recipientId, upToSeq: request.upToSeq))
    }
}
