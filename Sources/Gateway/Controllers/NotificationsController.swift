import Shared

/// The notifications screen and its live stream (NotificationService; actors from ProfileService).
struct NotificationsController: Controller {
    let graph: Backend
    let users: UserLookup
    let hub: StreamHub
    let logger: Logger
    /// Per-stream buffer in bytes (`GATEWAY_SSE_BUFFER_BYTES`).
    let streamBufferBytes: Int

    func register(_ routes: inout RouteCollection) {
        routes.add("GET", "/v1/notifications") { try await list($0) }
        routes.add("POST", "/v1/notifications/read") { request in
            let body = try request.body()
            try body.allowOnly(["upToSeq"])
            let upTo = try body.int("upToSeq", in: 0...9_007_199_254_740_991)  // the integers JSON carries exactly
            let r = try await graph.call(Graph.MarkRead.self, .init(recipientId: try request.userId, upToSeq: upTo))
            return try .json(UnreadShape(unreadCount: r.unreadCount))
        }
        routes.add("GET", "/v1/notifications/stream", streaming: true) { try await stream($0) }
    }

    /// `GET /v1/notifications` → page of `Notification` plus `unreadCount`: one `notify.list`,
    /// then one `profile.users_by_ids` for the actors.
    func list(_ request: Request) async throws -> HTTPResponse {
        let list = try await graph.call(
            Graph.ListNotifications.self, .init(recipientId: try request.userId, page: try request.page()))
        let actors = try await users.users(list.items.map(\.actorId))
        return try .json(
            NotificationPageShape(
                items: list.items.compactMap { n in actors[n.actorId].map { NotificationShape(n, actor: $0) } },
                nextCursor: list.nextCursor, unreadCount: list.unreadCount))
    }

    /// `GET /v1/notifications/stream`: Server-Sent Events. With `Last-Event-ID` (or `?since=`),
    /// first everything after that seq, then live events; without, live events only. A comment
    /// line is sent at once and every `GATEWAY_SSE_HEARTBEAT_SECONDS`.
    func stream(_ request: Request) async throws -> HTTPResponse {
        var after: Int64?
        if let raw = request.http.header("last-event-id")?.trimmingCharacters(in: .whitespaces), !raw.isEmpty {
            guard raw.utf8.count <= 19, let v = Int64(raw), v >= 0 else {
                throw Problem.invalidField("Last-Event-ID", "must be a notification seq (a non-negative integer)")
            }
            after = v
        } else if let raw = request.query["since"] {
            guard raw.utf8.count <= 19, let v = Int64(raw), v >= 0 else {
                throw Problem.invalidField("since", "must be a non-negative integer")
            }
            after = v
        }
        let userId = try request.userId
        let stream = EventStream(capacity: streamBufferBytes)
        guard
            let sub = hub.open(
                userId: userId, sessionId: request.session?.sessionId ?? "", stream: stream, afterSeq: after)
        else {
            throw Problem.serviceUnavailable("the gateway has no room for another stream, or is stopping")
        }
        stream.append(Array(": connected\n\n".utf8))
        if let after { Task { await sendBacklog(sub, userId: userId, after: after) } }
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
            while bytes < streamBufferBytes && !sub.stream.isClosed {
                let page = try await graph.call(
                    Graph.NotificationsSince.self, .init(recipientId: userId, afterSeq: cursor, limit: 100))
                let actors = try await users.users(page.items.map(\.actorId))
                for n in page.items {
                    cursor = max(cursor, n.seq)
                    guard let actor = actors[n.actorId] else { continue }
                    let event = NotificationShape(n, actor: actor).sseEvent()
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
}

/// Live delivery of notifications (in seq order) to the recipients' open streams, each with its
/// actor's public profile: one `profile.users_by_ids` call per batch of events. When
/// ProfileService cannot answer, the last known profile of an actor is used; a recipient whose
/// event cannot be enriched has its streams closed, so the client resumes from the backlog
/// (`Last-Event-ID`) and nothing is lost.
struct NotificationDelivery: Sendable {
    let users: UserLookup
    let hub: StreamHub
    let metrics: Metrics
    let logger: Logger

    /// Registers the gateway's handlers on its live subscribers.
    func subscribe(notifications: LiveEventSubscriber, auth: LiveEventSubscriber, sessions: SessionControl) {
        let hub = self.hub
        // Most events are for users with no stream here (a fan-out reaches everyone): those
        // are not decoded at all.
        let accept: @Sendable ([UInt8]) -> Bool = { envelope in
            guard let recipient = Self.peekRecipientId(envelope) else { return true }
            return hub.hasStreams(recipient)
        }
        notifications.on(Graph.NotificationCreated.self, accept: accept, { events in await deliver(events.map(\.body)) })
        auth.on(Auth.SessionRevoked.self) { events in
            sessions.revoke(events.flatMap(\.body.sessionIds))
        }
    }

    /// The `recipientId` of a `notify.created` envelope without decoding it, or nil when it
    /// cannot be read that way (the caller then decodes). The body's own top-level
    /// `recipientId` is the last `"recipientId":"` in the envelope (sorted keys; a quote inside
    /// a string value is escaped and cannot match).
    static func peekRecipientId(_ envelope: [UInt8]) -> String? {
        guard let start = EnvelopeScan.end(ofLast: Array(#""recipientId":""#.utf8), in: envelope) else { return nil }
        return EnvelopeScan.plainString(in: envelope, from: start)?.value
    }

    func deliver(_ events: [Graph.NotificationCreated]) async {
        metrics.eventReceived(producer: "notification", events.count)
        let live = events.filter { hub.hasStreams($0.recipientId) }
        if live.isEmpty { return }
        let actorIds = live.map(\.notification.actorId)
        let actors: [String: PublicUser]
        var lookupFailed = false
        do {
            actors = try await users.users(actorIds)
        } catch {
            lookupFailed = true
            logger.warning("stream.enrich_failed", metadata: ["error": "\(error)"])
            actors = users.remembered(actorIds)
        }
        for event in live {
            let n = event.notification
            guard let actor = actors[n.actorId] else {
                // Unknown to ProfileService: nothing to show. Unreachable: resume from the backlog.
                if lookupFailed { hub.close(userId: event.recipientId) }
                continue
            }
            hub.deliver(to: event.recipientId, seq: n.seq, bytes: NotificationShape(n, actor: actor).sseEvent())
        }
    }
}
