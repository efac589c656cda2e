import Foundation
import Shared

/// The notifications screen and its live stream (NotificationService; actors from ProfileService).
extension Gateway {
    /// `GET /v1/notifications` → page of `Notification` plus `unreadCount`: one `notify.list`,
    /// then one `profile.users_by_ids` for the actors.
    func listNotifications(_ call: Call) async throws -> HTTPResponse {
        let page = try call.page()
        let list = try await graph.call(
            Graph.ListNotifications.self, .init(recipientId: call.userId, page: page))
        let actors = try await usersById(list.items.map(\.actorId))
        let items = list.items.compactMap { n in
            actors[n.actorId].map { Shapes.notification(n, actor: $0) }
        }
        return reply(
            200, Shapes.page(items, nextCursor: list.nextCursor, extra: ["unreadCount": list.unreadCount])
        )
    }

    /// `POST /v1/notifications/read` `{upToSeq}` → `{unreadCount}`.
    func markRead(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["upToSeq"])
        let upTo = try body.int("upToSeq", in: 0...9_007_199_254_740_991)  // JSON-safe integers
        let r = try await graph.call(
            Graph.MarkRead.self, .init(recipientId: call.userId, upToSeq: upTo))
        return reply(200, ["unreadCount": r.unreadCount])
    }

    /// `GET /v1/notifications/stream`: Server-Sent Events. With `Last-Event-ID` (or `?since=`),
    /// first everything after that seq, then live events; without, live events only. A comment
    /// line is sent at once and every `GATEWAY_SSE_HEARTBEAT_SECONDS`.
    func openStream(_ call: Call) async throws -> HTTPResponse {
        var after: Int64?
        if let raw = call.request.header("last-event-id")?.trimmingCharacters(in: .whitespaces),
            !raw.isEmpty
        {
            guard let v = Int64(raw), v >= 0 else {
                throw Problem.invalidField("Last-Event-ID", "must be a notification seq")
            }
            after = v
        } else if let raw = call.request.query["since"] {
            guard let v = Int64(raw), v >= 0 else {
                throw Problem.invalidField("since", "must be a non-negative integer")
            }
            after = v
        }
        let stream = EventStream(capacity: config.streamBufferBytes)
        guard
            let sub = hub.open(
                userId: call.userId, sessionId: call.session?.sessionId ?? "", stream: stream,
                afterSeq: after)
        else {
            throw Problem.serviceUnavailable("the gateway is stopping")
        }
        stream.append(Array(": connected\n\n".utf8))
        if let after {
            let userId = call.userId
            Task { await self.sendBacklog(sub, userId: userId, after: after) }
        }
        return HTTPResponse(stream: stream)
    }

    /// Fetches everything after `after` in pages and writes it, then lets live events through.
    /// On a service error the stream is closed (the client resumes with Last-Event-ID).
    private func sendBacklog(_ sub: StreamHub.Subscription, userId: String, after: Int64) async {
        var cursor = after
        var items: [(seq: Int64, bytes: [UInt8])] = []
        var bytes = 0
        var complete = false
        do {
            while bytes < config.streamBufferBytes {
                let page = try await graph.call(
                    Graph.NotificationsSince.self, .init(recipientId: userId, afterSeq: cursor, limit: 100))
                let actors = try await usersById(page.items.map(\.actorId))
                for n in page.items {
                    cursor = max(cursor, n.seq)
                    guard let actor = actors[n.actorId] else { continue }
                    let event = Shapes.sseEvent(n, actor: actor)
                    bytes += event.count
                    items.append((n.seq, event))
                }
                if page.items.isEmpty || cursor >= page.headSeq {
                    complete = true
                    break
                }
            }
        } catch {
            logger.info("stream.backlog_failed", metadata: ["error": "\(error)"])
            sub.finishBacklog(items, thenClose: true)
            return
        }
        // A backlog larger than the buffer is sent in part; the client resumes after it.
        sub.finishBacklog(items, thenClose: !complete)
    }

    /// Live delivery of notifications (in seq order) to the recipients' open streams, each
    /// with its actor's public profile: one `profile.users_by_ids` call for all the actors.
    /// When ProfileService cannot answer, the last known profile of an actor is used; a
    /// recipient whose event cannot be enriched has its streams closed, so the client resumes
    /// from the backlog (`Last-Event-ID`) and nothing is lost.
    func notificationsCreated(_ events: [Graph.NotificationCreated]) async {
        let live = events.filter { hub.hasStreams($0.recipientId) }
        if live.isEmpty { return }
        let actorIds = live.map(\.notification.actorId)
        let actors: [String: PublicUser]
        var lookupFailed = false
        do {
            actors = try await usersById(actorIds)
        } catch {
            lookupFailed = true
            logger.warning("stream.enrich_failed", metadata: ["error": "\(error)"])
            actors = recentUsers.withLock { cache in
                Dictionary(actorIds.compactMap { id in cache[id].map { (id, $0) } }, uniquingKeysWith: { a, _ in a })
            }
        }
        for event in live {
            let n = event.notification
            guard let actor = actors[n.actorId] else {
                // Unknown to ProfileService: nothing to show. Unreachable: resume from the backlog.
                if lookupFailed { hub.close(userId: event.recipientId) }
                continue
            }
            hub.deliver(to: event.recipientId, seq: n.seq, bytes: Shapes.sseEvent(n, actor: actor))
        }
    }
}
