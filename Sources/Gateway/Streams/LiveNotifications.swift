import Messages
import ServiceKit
import Support
import Transport
import Wire

/// Live notifications for the streams this gateway holds, by routed delivery: the gateway
/// subscribes (a `TopicSubscriber` on NotificationService's delivery socket) to exactly the
/// recipients with a stream open here, so its work grows with what its clients receive, not
/// with every notification in the system, and N gateways split the delivery.
///
/// Per recipient a *channel* holds `seen`, the highest seq handed to the recipient's streams
/// with every one before it, and delivers strictly in seq order. Nothing is lost, whatever the
/// transport drops:
/// - a message above `seen + 1` (a gap: high-water mark, a reconnect) is held, and the missing
///   ones are read from NotificationService (`notification.since`) before it;
/// - the publisher's welcome (the subscription is active; also after either side restarts)
///   starts such a read from `seen`, covering whatever was published before the subscription
///   took effect (a subscription racing a notification);
/// - every `checkIntervalMs`, `notification.heads` for all channels finds a last notification lost
///   before a silence (nothing after it to show the gap).
/// Duplicates (a message that a read already delivered) are dropped by seq.
final class LiveNotifications: Sendable {
    private struct Channel {
        let userId: String
        /// Nil until `notification.stream_start` answered.
        var key: Int64?
        var seen: Int64 = 0
        /// The welcome arrived: messages published from then on come by subscription.
        var live = false
        var streams: [Int: StreamHub.Subscription] = [:]
        /// Rendered events above `seen + 1`, waiting for the ones before them.
        var pending: [Int64: [UInt8]] = [:]
        var syncing = false
        var syncAgain = false
        /// Streams attached while the key was being resolved, told the outcome.
        var waiters: [CheckedContinuation<Bool, Never>] = []
    }

    private struct State {
        var channels: [String: Channel] = [:]
        var userByKey: [Int64: String] = [:]
    }

    private let state = Locked(State())
    private let notification: any ServiceBackend
    private let users: UserLookup
    private let metrics: Metrics
    private let logger: Logger
    /// Set once by `connect`; nil in a gateway without a delivery endpoint.
    private let subscriber = Locked<TopicSubscriber?>(nil)
    /// Pending events held per channel beyond which they are dropped and read again instead.
    static let pendingLimit = 1_000
    /// How often a failed read of what a channel misses is tried again at once, 100 ms apart
    /// and doubling (about 3 s in all), before it is left to the heads check: a welcome right
    /// after NotificationService restarted can come before the RPC connection to it is back.
    static let syncRetries = 5

    init(notification: any ServiceBackend, users: UserLookup, metrics: Metrics, logger: Logger) {
        self.notification = notification
        self.users = users
        self.metrics = metrics
        self.logger = logger
    }

    /// The subscriber for NotificationService's delivery endpoints, to run as a service.
    func connect(context: ZMQContext, endpoints: [String], security: TransportSecurity) -> TopicSubscriber {
        let s = TopicSubscriber(
            name: "sub.delivery", context: context, endpoints: endpoints, service: ServiceDescription.notification.name,
            logger: logger, security: security
        ) { [weak self] items in await self?.handle(items) }
        subscriber.withLock { $0 = s }
        return s
    }

    /// Open channels (recipients with a stream here).
    var channelCount: Int { state.withLock { $0.channels.count } }

    // MARK: Streams

    /// Attaches an open stream to its recipient's channel, creating the channel (key and head
    /// from `notification.stream_start`, then the subscription) when it is the recipient's first
    /// stream here. Returns once the stream receives everything after the channel's `seen`.
    /// - Returns: the channel's `seen` then: the stream is offered every notification above it
    ///   from the moment it was attached (those between are held by the stream until its
    ///   backlog is in).
    /// - Throws: what `notification.stream_start` throws (the caller closes the stream).
    @discardableResult
    func attach(_ sub: StreamHub.Subscription) async throws -> Int64 {
        let userId = sub.userId
        let creates = state.withLock { s -> Bool in
            if s.channels[userId] != nil {
                s.channels[userId]!.streams[sub.id] = sub
                return false
            }
            var channel = Channel(userId: userId)
            channel.streams[sub.id] = sub
            s.channels[userId] = channel
            return true
        }
        guard creates else {
            // Another stream is resolving the channel: wait for the outcome.
            let resolved = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let now = state.withLock { s -> Bool? in
                    guard let channel = s.channels[userId], channel.streams[sub.id] != nil else { return false }
                    if channel.key != nil { return true }
                    s.channels[userId]!.waiters.append(c)
                    return nil
                }
                if let now { c.resume(returning: now) }
            }
            guard resolved else {
                throw ServiceError(.serviceUnavailable, message: "notifications are unavailable", status: 503)
            }
            return state.withLock { $0.channels[userId]?.seen ?? 0 }
        }
        do {
            let start = try await notification.call(Notifications.StreamStart.self, .init(recipientId: userId))
            let (subscribe, waiters) = state.withLock { s -> (Bool, [CheckedContinuation<Bool, Never>]) in
                guard var channel = s.channels[userId] else { return (false, []) }  // every stream left meanwhile
                channel.key = start.recipientKey
                channel.seen = start.headSeq
                let waiters = channel.waiters
                channel.waiters = []
                s.channels[userId] = channel
                s.userByKey[start.recipientKey] = userId
                return (true, waiters)
            }
            for w in waiters { w.resume(returning: true) }
            if subscribe {
                subscriber.withLock { $0 }?.subscribe(NotificationRouting.topic(recipientKey: start.recipientKey))
            }
            return start.headSeq
        } catch {
            let channel = state.withLock { s -> Channel? in
                defer { s.channels[userId] = nil }
                return s.channels[userId]
            }
            for w in channel?.waiters ?? [] { w.resume(returning: false) }
            throw error
        }
    }

    /// Detaches a closed stream; the recipient's last one ends the subscription.
    func detach(_ sub: StreamHub.Subscription) {
        let topic = state.withLock { s -> [UInt8]? in
            guard var channel = s.channels[sub.userId], channel.streams.removeValue(forKey: sub.id) != nil else {
                return nil
            }
            if !channel.streams.isEmpty {
                s.channels[sub.userId] = channel
                return nil
            }
            s.channels[sub.userId] = nil
            guard let key = channel.key else { return nil }  // the resolving attach finds it gone
            s.userByKey[key] = nil
            return NotificationRouting.topic(recipientKey: key)
        }
        if let topic { subscriber.withLock { $0 }?.unsubscribe(topic) }
    }

    // MARK: Delivery

    /// Handles what the subscriber received, in order.
    func handle(_ items: [TopicItem]) async {
        var welcomed: [String] = []
        var messages: [(userId: String, notification: Notifications.Notification)] = []
        for item in items {
            switch item {
            case .welcome(let topic):
                guard let key = NotificationRouting.recipientKey(topic: topic),
                    let userId = state.withLock({ $0.userByKey[key] })
                else { continue }
                welcomed.append(userId)
            case .message(let message):
                guard let key = NotificationRouting.recipientKey(topic: message.topic),
                    let userId = state.withLock({ $0.userByKey[key] })
                else { continue }  // unsubscribed meanwhile
                guard let n = try? WireJSON.decode(Notifications.Notification.self, from: message.payload) else {
                    logger.warning("stream.bad_message", metadata: ["bytes": "\(message.payload.count)"])
                    continue
                }
                messages.append((userId, n))
            }
        }
        if !messages.isEmpty {
            metrics.eventReceived(producer: "notification", messages.count)
            // A message that carries its actor (as of its event) is shown as it is; only the
            // others (follows, older producers) are looked up at ProfileService.
            let lacking = messages.compactMap { Self.carriedActor($0.notification) == nil ? $0.notification : nil }
            let (actors, complete) = lacking.isEmpty ? ([:], true) : await actors(for: lacking)
            for (userId, n) in messages {
                if let actor = Self.carriedActor(n) ?? actors[n.actorId] {
                    offer(userId: userId, seq: n.seq, event: NotificationShape(n, actor: actor).sseEvent())
                } else if complete {
                    offer(userId: userId, seq: n.seq, event: nil)  // a deleted account: nothing to show
                } else {
                    // ProfileService could not say who the actor is: read it again later, in
                    // order (the heads check retries until it can).
                    sync(userId)
                }
            }
        }
        for userId in welcomed {
            state.withLock { $0.channels[userId]?.live = true }
            sync(userId)
        }
    }

    /// The actor that `n` carries (`Notifications.Notification.actor`), if it is `n`'s actor.
    static func carriedActor(_ n: Notifications.Notification) -> PublicUser? {
        guard let actor = n.actor, actor.id == n.actorId else { return nil }
        return actor
    }

    /// Public users for the actors, and whether ProfileService answered; when it cannot, the
    /// last known ones.
    private func actors(for notifications: [Notifications.Notification]) async -> ([String: PublicUser], complete: Bool) {
        let ids = notifications.map(\.actorId)
        do {
            return (try await users.users(ids), true)
        } catch {
            logger.warning("stream.enrich_failed", metadata: ["error": "\(error)"])
            return (users.remembered(ids), false)
        }
    }

    /// A live event for `userId`: delivered now when it is the next, else held and the gap read.
    /// `event` nil: the actor is unknown (a deleted account) and there is nothing to show.
    private func offer(userId: String, seq: Int64, event: [UInt8]?) {
        let needsSync = state.withLock { s -> Bool in
            guard var c = s.channels[userId], seq > c.seen else { return false }
            defer { s.channels[userId] = c }
            if c.live && !c.syncing && seq == c.seen + 1 {
                Self.deliver(&c, seq, event)
                Self.flush(&c)
                return false
            }
            if c.pending.count < Self.pendingLimit { c.pending[seq] = event ?? [] }
            return c.live
        }
        if needsSync { sync(userId) }
    }

    /// Hands `event` to the channel's streams and moves `seen`.
    private static func deliver(_ c: inout Channel, _ seq: Int64, _ event: [UInt8]?) {
        if let event, !event.isEmpty {
            for sub in c.streams.values { sub.offer(seq: seq, bytes: event) }
        }
        c.seen = seq
    }

    /// Delivers the held events that follow `seen` without a gap, and drops those below it.
    private static func flush(_ c: inout Channel) {
        while let event = c.pending.removeValue(forKey: c.seen + 1) { deliver(&c, c.seen + 1, event) }
        if !c.pending.isEmpty { c.pending = c.pending.filter { $0.key > c.seen } }
    }

    /// Reads what the channel misses from NotificationService (one reader per channel at a time;
    /// a request meanwhile makes it read once more).
    /// - Parameter attempt: how many reads for this channel failed in a row before this one.
    private func sync(_ userId: String, attempt: Int = 0) {
        let start = state.withLock { s -> Bool in
            guard s.channels[userId] != nil else { return false }
            if s.channels[userId]!.syncing {
                s.channels[userId]!.syncAgain = true
                return false
            }
            s.channels[userId]!.syncing = true
            return true
        }
        guard start else { return }
        Task { await self.runSync(userId, attempt: attempt) }
    }

    private func runSync(_ userId: String, attempt: Int) async {
        while true {
            guard let after = state.withLock({ $0.channels[userId]?.seen }) else { return }
            let page: Notifications.NotificationsSince.Reply
            let actors: [String: PublicUser]
            do {
                page = try await notification.call(
                    Notifications.NotificationsSince.self, .init(recipientId: userId, afterSeq: after, limit: 200))
                actors = try await users.users(page.items.map(\.actorId))
            } catch {
                // Tried again a few times, then on the next heads check.
                logger.info("stream.sync_failed", metadata: ["error": "\(error)", "attempt": "\(attempt)"])
                state.withLock { $0.channels[userId]?.syncing = false }
                metrics.streamRepair("failed")
                if attempt < Self.syncRetries {
                    try? await Task.sleep(for: .milliseconds(100 << attempt))
                    sync(userId, attempt: attempt + 1)
                }
                return
            }
            let more = state.withLock { s -> Bool in
                guard var c = s.channels[userId] else { return false }
                defer { s.channels[userId] = c }
                var filled = 0
                for n in page.items where n.seq > c.seen {
                    Self.deliver(&c, n.seq, actors[n.actorId].map { NotificationShape(n, actor: $0).sseEvent() })
                    filled += 1
                }
                Self.flush(&c)
                if filled > 0 { metrics.streamRepair("filled", filled) }
                if !page.items.isEmpty && c.seen < page.headSeq { return true }
                if c.syncAgain {
                    c.syncAgain = false
                    return true
                }
                c.syncing = false
                return false
            }
            if !more { return }
        }
    }

    /// Asks NotificationService for the head of every live channel and reads what is missing
    /// (a notification lost before a silence).
    func checkHeads() async {
        let channels = state.withLock { s in
            s.channels.values.compactMap { c -> (key: Int64, userId: String)? in
                guard let key = c.key, c.live, !c.syncing else { return nil }
                return (key, c.userId)
            }
        }
        var start = 0
        while start < channels.count {
            let chunk = Array(channels[start..<min(start + Notifications.Heads.maxKeys, channels.count)])
            start += chunk.count
            guard
                let reply = try? await notification.call(Notifications.Heads.self, .init(recipientKeys: chunk.map(\.key))),
                reply.heads.count == chunk.count
            else { continue }
            for (channel, head) in zip(chunk, reply.heads) {
                let behind = state.withLock { s in s.channels[channel.userId].map { head > $0.seen } ?? false }
                if behind {
                    metrics.streamRepair("head_behind")
                    sync(channel.userId)
                }
            }
        }
    }
}
