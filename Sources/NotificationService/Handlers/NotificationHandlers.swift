import Shared

/// A recipient's notifications: `notify.list`, `notify.since`, `notify.mark_read`.
struct NotificationHandlers: Sendable {
    let store: any NotificationStore

    func register(on host: ServiceHost) {
        host.on(Graph.ListNotifications.self) { request, _ in
            try await store.list(recipientId: request.recipientId, page: request.page)
        }
        host.on(Graph.NotificationsSince.self) { request, _ in
            try await store.since(recipientId: request.recipientId, afterSeq: request.afterSeq, limit: request.limit)
        }
        host.on(Graph.MarkRead.self) { request, _ in
            .init(unreadCount: try await store.markRead(recipientId: request.recipientId, upToSeq: request.upToSeq))
        }
    }
}
