import Messages
import Support

/// The notifications screen and its live stream (NotificationService; actors from ProfileService).
struct NotificationsController: Controller {
    let notification: any ServiceBackend
    let users: UserLookup
    let hub: StreamHub
    let live: LiveNotifications
    let logger: Logger
    /// Per-stream buffer in bytes (`GATEWAY_SSE_BUFFER_BYTES`).
    let streamBufferBytes: Int

    func register(_ routes: inout RouteCollection) {
        routes.add(.get, "/v1/notifications") { try await list($0) }
        routes.add(.post, "/v1/notifications/read", body: .json) { try await markRead($0) }
        routes.add(.get, "/v1/notifications/groups") { try await groups($0) }
        routes.add(.get, "/v1/notifications/unread-count") { request in
            let r = try await notification.call(Notifications.UnreadCount.self, .init(recipientId: try request.userId))
            return try .json(UnreadShape(unreadCount: r.unreadCount))
        }
        routes.add(.get, "/v1/notifications/stream", streaming: true) { try await stream($0) }
    }

    /// `GET /v1/notifications` → page of `Notification` plus `unreadCount`: one `notification.list`,
    /// then one `profile.users_by_ids` for the actors.
    func list(_ request: Request) async throws -> HTTPResponse {
        let list = try await notification.call(
            Notifications.ListNotifications.self, .init(recipientId: try request.userId, page: try request.page()))
        let actors = try await users.users(list.items.map(\.actorId))
        return try .json(
            NotificationPageShape(
                items: list.items.compactMap { n in actors[n.actorId].map { NotificationShape(n, actor: $0) } },
                nextCursor: list.nextCursor, unreadCount: list.unreadCount))
    }

    /// `POST /v1/notifications/read`: `{upToSeq}` or `{all: true}` (exactly one) → `{unreadCount}`.
    /// - Throws: 400 naming `upToSeq` (missing, or not an integer JSON carries exactly) or `all`
    ///   (not `true`, or given with `upToSeq`).
    func markRead(_ request: Request) async throws -> HTTPResponse {
        let recipientId = try request.userId
        let call: Notifications.MarkRead.Request
        switch try request.decode(MarkReadBody.self) {
        case .all: call = .init(recipientId: recipientId, upToSeq: 0, all: true)
        case .upTo(let seq): call = .init(recipientId: recipientId, upToSeq: seq)
        }
        let r = try await notification.call(Notifications.MarkRead.self, call)
        return try .json(UnreadShape(unreadCount: r.unreadCount))
    }

    /// `GET /v1/notifications/groups` → page of `NotificationGroup` plus `unreadCount`: one
    /// `notification.list_groups`, then one `profile.users_by_ids` for the actors. A group whose
    /// actors are all unknown to ProfileService (deleted accounts) is left out.
    func groups(_ request: Request) async throws -> HTTPResponse {
        let page = try await notification.call(
            Notifications.ListGroups.self, .init(recipientId: try request.userId, page: try request.page()))
        let actors = try await users.users(page.items.flatMap(\.actorIds))
        return try .json(
            NotificationGroupPageShape(
                items: page.items.compactMap { g in
                    let known = g.actorIds.compactMap { actors[$0] }
                    return known.isEmpty ? nil : NotificationGroupShape(g, actors: known)
                },
                nextCursor: page.nextCursor, unreadCount: page.unreadCount))
    }

    /// `GET /v1/notifications/stream`: Server-Sent Events. With `Last-Event-ID` (or `?since=`),
    /// first everything after that seq, then live events; without, live events only (every
    /// notification after the stream was opened). The response starts once the stream is
    /// attached to its recipient's live channel (503 when NotificationService cannot say where
    /// the recipient's notifications stand); a comment line is sent at once and every
    /// `GATEWAY_SSE_HEARTBEAT_SECONDS`. A resume point above every notification there is (an
    /// id from another history) resumes from the newest: the next notification is sent.
    func stream(_ request: Request) async throws -> HTTPResponse {
        var after: Int64?
        if let raw = request.http.header("last-event-id")?.trimmingOptionalWhitespace(), !raw.isEmpty {
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
        let sub: StreamHub.Subscription
        switch hub.open(
            userId: userId, address: request.clientAddress, sessionId: request.session?.sessionId ?? "",
            stream: stream, afterSeq: after)
        {
        case .success(let opened):
            sub = opened
        case .failure(.full):
            throw Problem.serviceUnavailable("the gateway has no room for another stream, or is stopping")
        case .failure(.perUser):
            throw Problem(
                status: 429, code: .tooManyStreams,
                detail: "this account has \(hub.perUser) notification streams open already; close one first", retryAfter: 5)
        case .failure(.perAddress):
            throw Problem(
                status: 429, code: .tooManyStreams,
                detail: "this address has \(hub.perAddress) notification streams open already; close one first",
                retryAfter: 5)
        }
        let liveAfter: Int64
        do {
            liveAfter = try await live.attach(sub)
        } catch {
            stream.close()
            throw error
        }
        stream.append(Array(": connected\n\n".utf8))
        if let after { Task { await sendBacklog(sub, userId: userId, after: after, liveAfter: liveAfter) } }
        return HTTPResponse(stream: stream)
    }

    /// Fetches everything after `after` in pages and writes it, then lets live events through.
    /// On a service error the stream is closed (the client resumes with Last-Event-ID). When
    /// `after` is above the recipient's head (an id from another history, e.g. before a
    /// database reset), the stream goes on after `liveAfter` (where its live channel stood when
    /// it was attached: everything above reaches it live) instead of taking the next
    /// notifications for ones the client already has.
    private func sendBacklog(_ sub: StreamHub.Subscription, userId: String, after: Int64, liveAfter: Int64) async {
        var cursor = after
        var items: [(seq: Int64, bytes: [UInt8])] = []
        var bytes = 0
        var complete = false
        do {
            while bytes < streamBufferBytes && !sub.stream.isClosed {
                let page = try await notification.call(
                    Notifications.NotificationsSince.self, .init(recipientId: userId, afterSeq: cursor, limit: 100))
                if page.headSeq < after {
                    sub.finishBacklog([], resumeAfter: liveAfter)
                    return
                }
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

    /// `POST /v1/notifications/read`'s body: `{upToSeq}` or `{all: true}`, exactly one.
    enum MarkReadBody: Decodable {
        /// Every notification.
        case all
        /// Every notification up to this seq.
        case upTo(Int64)

        /// The seqs a client can send: the integers JSON carries exactly.
        static let seqs: ClosedRange<Int64> = 0...9_007_199_254_740_991

        enum CodingKeys: String, CodingKey { case upToSeq, all }

        /// - Throws: 400 naming `upToSeq` (missing, or not an integer JSON carries exactly) or
        ///   `all` (not `true`, or given with `upToSeq`), or an unknown member.
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            if c.contains(.all) {
                guard try c.decode(Bool.self, forKey: .all) else {
                    throw Problem.invalidField("all", "must be true (or give upToSeq instead)")
                }
                guard !c.contains(.upToSeq) else { throw Problem.invalidField("all", "give either upToSeq or all, not both") }
                self = .all
            } else {
                self = .upTo(try c.decode(Int64.self, forKey: .upToSeq, in: Self.seqs))
            }
        }
    }
}
