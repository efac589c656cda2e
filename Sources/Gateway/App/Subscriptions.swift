import Foundation
import Shared

/// The gateway's event subscriptions: `notification` (live stream events) and `auth` (session
/// revocations). Both start at the producer's current head; the gateway keeps no durable state.
extension Gateway {
    /// The services that run beside the HTTP server: the two subscribers and the heartbeat.
    func backgroundServices(_ runtime: ServiceRuntime) -> [any Service] {
        let env = runtime.env
        let notifications = EventSubscriber(
            producer: "notification", eventsEndpoint: ServiceEndpoints.notification(env).events,
            context: runtime.context,
            replay: graph.client, logger: logger,
            startAfter: { [unowned self] in try await self.startingHead(of: self.graph) },
            deliver: { [unowned self] event in
                self.metrics.eventReceived(producer: "notification")
                guard event.header.type == Graph.NotificationCreated.type else { return }
                await self.notificationsCreated([try event.decode(Graph.NotificationCreated.self)])
            },
            deliverBatch: { [unowned self] events in
                // Events that arrived together: one ProfileService call enriches them all.
                var created: [Graph.NotificationCreated] = []
                for event in events {
                    self.metrics.eventReceived(producer: "notification")
                    guard event.header.type == Graph.NotificationCreated.type else { continue }
                    // Most are for users with no stream here (a fan-out reaches everyone):
                    // those are not decoded at all.
                    if let recipient = Self.peekRecipientId(event.envelope), !self.hub.hasStreams(recipient) {
                        continue
                    }
                    created.append(try event.decode(Graph.NotificationCreated.self))
                }
                await self.notificationsCreated(created)
                return events.count
            })
        let sessions = EventSubscriber(
            producer: "auth", eventsEndpoint: ServiceEndpoints.auth(env).events, context: runtime.context,
            replay: auth.client,
            logger: logger, startAfter: { [unowned self] in try await self.startingHead(of: self.auth) },
            deliver: { [unowned self] event in
                self.metrics.eventReceived(producer: "auth")
                guard event.header.type == Auth.SessionRevoked.type else { return }
                self.sessionsRevoked(try event.decode(Auth.SessionRevoked.self).sessionIds)
            })
        let heartbeat = ServiceClosure { [unowned self] in
            while !Task.isCancelled {
                // A little under the interval, so the gap between comments never exceeds it.
                try? await Task.sleep(for: .milliseconds(self.config.heartbeatSeconds * 1_000 - 250))
                if Task.isCancelled { break }
                self.hub.heartbeat()
            }
        }
        return [
            ServiceClosure { try await notifications.run() }, ServiceClosure { try await sessions.run() },
            heartbeat,
        ]
    }

    /// The `recipientId` of a `notify.created` envelope without decoding it, or nil when it
    /// cannot be read that way (the caller then decodes). The envelope is written with sorted
    /// keys, so the body's own top-level `recipientId` is the last `"recipientId":"` in it (a
    /// quote inside a string value is escaped and cannot match); an id with an escape in it is
    /// left to the decoder.
    static func peekRecipientId(_ envelope: [UInt8]) -> String? {
        guard let start = EnvelopeScan.end(ofLast: Array(#""recipientId":""#.utf8), in: envelope) else { return nil }
        return EnvelopeScan.plainString(in: envelope, from: start)?.value
    }

    /// The head to start a subscriber at, counted toward `waitForSubscribers`.
    func startingHead(of backend: Backend) async throws -> Int64 {
        let head = try await Self.head(of: backend)
        subscribersStarted.withLock { $0 += 1 }
        return head
    }

    /// Waits (polling, startup only) until both subscribers know their producer's head, so an
    /// event created after the gateway reports ready reaches open streams; gives up after
    /// `timeoutMs` (a producer that is down must not keep the gateway from serving).
    func waitForSubscribers(timeoutMs: Int64) async {
        let deadline = Timestamp.nowMs() + timeoutMs
        while subscribersStarted.withLock({ $0 }) < 2 && Timestamp.nowMs() < deadline
            && !Task.isCancelled
        {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The producer's newest seq (`ops.replay` with limit 0), retried until it answers or the
    /// task is cancelled.
    static func head(of backend: Backend) async throws -> Int64 {
        var delayMs = 50
        while true {
            try Task.checkCancellation()
            if let reply = try? await backend.client.call(
                Ops.Replay.self, .init(after: 0, limit: 0), timeoutMs: 1_000)
            {
                return reply.head
            }
            try await Task.sleep(for: .milliseconds(delayMs))
            delayMs = min(delayMs * 2, 1_000)
        }
    }
}
