import Shared

/// A recipient's notifications: `notify.list`, `notify.since`, `notify.mark_read`, and what
/// gateways need for routed delivery: `notify.stream_start`, `notify.heads`.
struct NotificationHandlers: Sendable {
    let store: any NotificationStore

    func register(on host: ServiceHost) {
        host.on(Graph.ListNotifications.self) { request, _ in try await list(request) }
        host.on(Graph.NotificationsSince.self) { request, _ in try await since(request) }
        host.on(Graph.MarkRead.self) { request, _ in try await markRead(request) }
        host.on(Graph.StreamStart.self) { request, _ in try await streamStart(request) }
        host.on(Graph.Heads.self) { request, _ in try await heads(request) }
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

    /// The recipient's key (its delivery topic) and head seq.
    func streamStart(_ request: Graph.StreamStart.Request) async throws -> Graph.StreamStart.Reply {
        try await store.streamStart(recipientId: request.recipientId)
    }

    /// Each recipient's head seq. - Throws: 400 `invalid_field` for more than `Graph.Heads.maxKeys`.
    func heads(_ request: Graph.Heads.Request) async throws -> Graph.Heads.Reply {
        guard request.recipientKeys.count <= Graph.Heads.maxKeys else {
            throw ServiceError.validation([
                .init(field: "recipientKeys", code: "too_many", message: "at most \(Graph.Heads.maxKeys) keys")
            ])
        }
        return .init(heads: try await store.heads(recipientKeys: request.recipientKeys))
    }
}
