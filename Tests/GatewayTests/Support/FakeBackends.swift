import BackendKit
import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import Synchronization
import TestSupport
import Transport
import Wire

/// In-process stand-ins for AuthService, ProfileService and NotificationService, speaking the
/// real wire protocol (ServiceHost + outbox, and a `TopicPublisher` for routed delivery), so the
/// gateway executable can be tested on its own: known users and tokens, a notification list per
/// recipient, and notifications delivered — or, on demand, stored without being delivered, as
/// a dropped or raced message would be.
final class FakeBackends: Sendable {
    struct State {
        var users: [String: PublicUser] = [:]
        /// token → (userId, sessionId)
        var tokens: [String: (String, String)] = [:]
        var revoked: Set<String> = []
        var notifications: [String: [Notifications.Notification]] = [:]
        var calls: [String: Int] = [:]
        /// Recipient keys (the delivery topics), by user id.
        var keys: [String: Int64] = [:]
        /// A notification to store (not deliver) while answering the next `notification.stream_start`
        /// for this user id, after reading the head it answers with.
        var raceOnStreamStart: [String: String] = [:]
        /// `profile.users_by_ids` answers 503 (ProfileService unreachable) while set.
        var profileDown = false
        /// Media `profile.read_media` serves, by id (every variant the same bytes).
        var media: [String: [UInt8]] = [:]
        /// How many of the next chunk reads (`length` > 0) at `offset` ≥ `from` of
        /// `profile.read_media` answer 503 (ProfileService restarting); a negative count fails
        /// every one.
        var failChunkReads = (count: 0, from: 0)
        /// `notification.notifications_since` calls still to answer with 503.
        var failSinceReads = 0
    }
    let context = ZMQContext()
    let auth: ServiceHost
    let profile: ServiceHost
    let notification: ServiceHost
    let delivery: TopicPublisher
    let deliveryEndpoint: String
    private let deliveryTask: Task<Void, Never>
    let authDB: Database
    let notificationDB: Database
    let state = Mutex(State())
    let directory: String

    init() throws {
        directory = makeTemporaryDirectory("gateway-fakes")
        let logger = Logger(service: "fake", minimum: .error)
        authDB = try Database(path: "\(directory)/auth.sqlite", producer: "auth", migrations: [])
        notificationDB = try Database(
            path: "\(directory)/notification.sqlite", producer: "notification", migrations: [])
        let profileDB = try Database(
            path: "\(directory)/profile.sqlite", producer: "profile", migrations: [])
        let bind = "tcp://127.0.0.1:*"
        auth = ServiceHost(
            name: "auth", context: context, rpcBind: bind, eventsBind: bind, database: authDB,
            logger: logger)
        profile = ServiceHost(
            name: "profile", context: context, rpcBind: bind, eventsBind: bind, database: profileDB,
            logger: logger)
        notification = ServiceHost(
            name: "notification", context: context, rpcBind: bind, eventsBind: bind,
            database: notificationDB, logger: logger)
        delivery = TopicPublisher(name: "fake.delivery", context: context, bind: bind, logger: logger)
        deliveryEndpoint = try delivery.bind()
        let publisher = delivery
        deliveryTask = Task { await publisher.run() }
        registerAuth()
        registerProfile()
        registerNotification()
        try auth.start()
        try profile.start()
        try notification.start()
    }

    /// The gateway's environment pointing at these hosts.
    var gatewayEnvironment: [String: String] {
        // The fakes speak ZMTP NULL (CURVE off): these tests check the gateway's HTTP side; CURVE
        // between the real executables is on in every Cluster test.
        var env: [String: String] = [
            "GATEWAY_HOST": "127.0.0.1", "GATEWAY_PORT": "0", "DATA_DIR": directory, "CURVE_ENABLED": "false",
        ]
        for (prefix, host) in [("AUTH", auth), ("PROFILE", profile), ("NOTIFICATION", notification)] {
            let (rpc, events) = host.boundEndpoints.withLock { $0 }
            env["\(prefix)_RPC_ENDPOINT"] = rpc
            env["\(prefix)_EVENTS_ENDPOINT"] = events
        }
        env["NOTIFICATION_DELIVERY_ENDPOINT"] = deliveryEndpoint
        return env
    }

    /// Adds a user with a session; returns the token.
    @discardableResult
    func addUser(_ username: String) -> String {
        let user = PublicUser(
            id: "u-\(username)", username: username, name: username.capitalized, bio: "",
            profilePhotoURL: nil)
        let token = "tok-\(username)-\(RandomID.make().prefix(8))"
        state.withLock {
            $0.users[user.id] = user
            $0.tokens[token] = (user.id, "s-\(token)")
        }
        return token
    }

    func calls(_ type: String) -> Int { state.withLock { $0.calls[type, default: 0] } }

    /// The recipient key of `userId` (assigned on first use).
    private static func key(_ s: inout State, _ userId: String) -> Int64 {
        if let k = s.keys[userId] { return k }
        let k = Int64(s.keys.count + 1)
        s.keys[userId] = k
        return k
    }

    /// Stores the next notification of `recipient` (in `s`). - Returns: it and its recipient key.
    private static func store(
        _ s: inout State, _ recipient: String, from actor: String, type: NotificationKind
    ) -> (Int64, Notifications.Notification) {
        let seq = Int64((s.notifications["u-\(recipient)"]?.count ?? 0) + 1)
        let post =
            type == .follow ? nil : Notifications.Notification.PostRef(id: "p1", thumbnailURL: "https://img.example/p1.jpg")
        let n = Notifications.Notification(
            id: "n-\(recipient)-\(seq)", seq: seq, type: type, detail: type == .like ? "photo" : nil,
            createdAt: Timestamp.now(), read: false, actorId: "u-\(actor)", post: post,
            followState: type == .follow ? .notFollowing : nil)
        s.notifications["u-\(recipient)", default: []].append(n)
        return (key(&s, "u-\(recipient)"), n)
    }

    /// Stores a notification for `recipient` and, unless `deliver` is false (a message the
    /// transport lost), publishes it on the delivery socket. - Returns: its seq.
    @discardableResult
    func notify(_ recipient: String, from actor: String, type: NotificationKind = .like, deliver: Bool = true) async throws
        -> Int64
    {
        let (key, n) = state.withLock { Self.store(&$0, recipient, from: actor, type: type) }
        if deliver { publish([(key, n)]) }
        return n.seq
    }

    /// Makes ProfileService's user lookups fail (503) or answer again.
    func setProfileDown(_ down: Bool) { state.withLock { $0.profileDown = down } }

    /// Makes the next `notification.stream_start` for `recipient` store a notification from `actor`
    /// right after it reads the head it answers with, without delivering it: a notification that
    /// races the gateway's subscription.
    func raceNextStreamStart(_ recipient: String, from actor: String) {
        state.withLock { $0.raceOnStreamStart["u-\(recipient)"] = actor }
    }

    private func publish(_ items: [(Int64, Notifications.Notification)]) {
        let messages = items.compactMap { key, n in
            (try? WireJSON.encode(n)).map { TopicMessage(topic: NotificationRouting.topic(recipientKey: key), payload: $0) }
        }
        delivery.publish { messages }
    }

    /// Stores `n` like notifications for `recipient` and publishes them together.
    func notifyBurst(_ recipient: String, from actor: String, count n: Int) async throws {
        try await notifyBurst(Array(repeating: (recipient, actor), count: n))
    }

    /// Stores one like notification per (recipient, actor) pair and publishes them together, in
    /// order.
    func notifyBurst(_ pairs: [(recipient: String, actor: String)]) async throws {
        let batch = state.withLock { s in pairs.map { Self.store(&s, $0.recipient, from: $0.actor, type: .like) } }
        publish(batch)
    }

    private func count(_ type: String) { state.withLock { $0.calls[type, default: 0] += 1 } }

    private func registerAuth() {
        auth.on(Auth.Validate.self) { [self] req, _ in
            count(Auth.Validate.type)
            let found = state.withLock { s -> (String, String)? in
                guard let t = s.tokens[req.token], !s.revoked.contains(t.1) else { return nil }
                return t
            }
            guard let (userId, sessionId) = found else {
                throw ServiceError.unauthorized("invalid_token", "unknown token")
            }
            return .init(
                userId: userId, sessionId: sessionId, username: String(userId.dropFirst(2)),
                expiresAt: "2999-01-01T00:00:00.000Z")
        }
        auth.on(Auth.Logout.self) { [self] req, _ in
            guard let (userId, sessionId) = state.withLock({ $0.tokens[req.token] }) else {
                throw ServiceError.unauthorized("invalid_token", "unknown token")
            }
            state.withLock { _ = $0.revoked.insert(sessionId) }
            return .init(userId: userId, revokedSessionIds: [sessionId])
        }
        // Stand-ins for the owners' rules (the real ones are tested with the real services).
        auth.on(Auth.CheckIdentityFields.self) { req, _ in
            if let password = req.password, password.count < 8 {
                throw ServiceError.validation(
                    [FieldError(field: "password", code: "weak_password", message: "too short")], code: "weak_password")
            }
            return Empty()
        }
        auth.on(Auth.CompleteRegistration.self) { [self] _, _ in
            count(Auth.CompleteRegistration.type)
            return Empty()
        }
        auth.on(Auth.Register.self) { req, _ in
            return .init(
                identity: Identity(
                    id: "u-\(req.username)", username: req.username, email: req.email, version: 1),
                session: .init(token: "tok-new", sessionId: "s-new", expiresAt: "2999-01-01T00:00:00.000Z"))
        }
    }

    /// Stores `bytes` as a media object served by `profile.read_media`; returns its id.
    @discardableResult
    func addMedia(_ bytes: [UInt8]) -> String {
        let id = String(repeating: "ab", count: 32)
        state.withLock { $0.media[id] = bytes }
        return id
    }

    /// Makes the next `n` chunk reads of media at `offset` or later answer 503 (negative: all
    /// of them, until changed).
    func failChunkReads(_ n: Int, from offset: Int = 0) { state.withLock { $0.failChunkReads = (n, offset) } }

    private func registerProfile() {
        profile.onBinary(Profile.ReadMedia.self) { [self] req, _, _ in
            count(Profile.ReadMedia.type)
            let (bytes, fail) = state.withLock { s -> ([UInt8]?, Bool) in
                var fail = false
                if req.length > 0, s.failChunkReads.count != 0, req.offset >= s.failChunkReads.from {
                    fail = true
                    if s.failChunkReads.count > 0 { s.failChunkReads.count -= 1 }
                }
                return (s.media[req.id], fail)
            }
            guard let bytes else { throw ServiceError.notFound("media") }
            if fail { throw ServiceError(code: "service_unavailable", message: "profile is restarting", status: 503) }
            let end = min(bytes.count, req.offset + min(req.length, Profile.ReadMedia.maxChunkBytes))
            let reply = Profile.ReadMedia.Reply(size: bytes.count, contentType: "video/mp4", etag: "\"\(req.id)-original\"")
            return (reply, req.length == 0 || req.offset >= end ? [] : Array(bytes[req.offset..<end]))
        }
        profile.on(Profile.CheckProfileFields.self) { req, _ in
            var errors: [FieldError] = []
            if let gender = req.gender, !["female", "male", "custom", "prefer_not_to_say"].contains(gender) {
                errors.append(FieldError(field: "gender", code: "invalid_gender", message: "not a gender"))
            }
            if let date = req.birthDate, date.hasSuffix("-30"), date.contains("-02-") {
                errors.append(FieldError(field: "birthDate", code: "invalid_birth_date", message: "not a date"))
            }
            if !errors.isEmpty { throw ServiceError.validation(errors) }
            return Empty()
        }
        profile.on(Profile.UsersByIds.self) { [self] req, _ in
            count(Profile.UsersByIds.type)
            if state.withLock({ $0.profileDown }) {
                throw ServiceError(code: "service_unavailable", message: "profile is down", status: 503)
            }
            return .init(users: state.withLock { s in req.ids.compactMap { s.users[$0] } })
        }
        profile.on(Profile.CreateProfile.self) { req, _ in
            Me(
                id: req.identity.id, username: req.identity.username, name: req.name ?? "", bio: "",
                profilePhotoURL: nil,
                email: req.identity.email, phone: nil, gender: req.gender, birthDate: req.birthDate,
                joinDate: Timestamp.now())
        }
        profile.on(Profile.Header.self) { [self] req, _ in
            count(Profile.Header.type)
            guard let user = state.withLock({ $0.users["u-\(req.username)"] }) else {
                throw ServiceError.notFound("user")
            }
            return .init(user: user, postCount: 3)
        }
    }

    private func registerNotification() {
        notification.on(Notifications.StreamStart.self) { [self] req, _ in
            count(Notifications.StreamStart.type)
            return state.withLock { s in
                let key = Self.key(&s, req.recipientId)
                let head = s.notifications[req.recipientId]?.last?.seq ?? 0
                if let actor = s.raceOnStreamStart.removeValue(forKey: req.recipientId) {
                    _ = Self.store(&s, String(req.recipientId.dropFirst(2)), from: actor, type: .like)
                }
                return .init(recipientKey: key, headSeq: head)
            }
        }
        notification.on(Notifications.Heads.self) { [self] req, _ in
            count(Notifications.Heads.type)
            return state.withLock { s in
                let byKey = Dictionary(uniqueKeysWithValues: s.keys.map { ($0.value, $0.key) })
                return .init(heads: req.recipientKeys.map { k in byKey[k].flatMap { s.notifications[$0]?.last?.seq } ?? 0 })
            }
        }
        notification.on(Notifications.Header.self) { [self] req, _ in
            count(Notifications.Header.type)
            return .init(
                userId: "u-\(req.username)", followers: 5, following: 7,
                followState: req.viewerId == "u-\(req.username)" ? .self : .following)
        }
        notification.on(Notifications.NotificationsSince.self) { [self] req, _ in
            let fail = state.withLock { s -> Bool in
                defer { s.failSinceReads = max(0, s.failSinceReads - 1) }
                return s.failSinceReads > 0
            }
            if fail {
                count(Notifications.NotificationsSince.type)
                throw ServiceError.unavailable("notification")
            }
            let all = state.withLock { $0.notifications[req.recipientId] ?? [] }
            defer { count(Notifications.NotificationsSince.type) }  // counted once the answer is fixed
            return .init(
                items: Array(all.filter { $0.seq > req.afterSeq }.prefix(req.limit)),
                headSeq: all.last?.seq ?? 0)
        }
        notification.on(Notifications.ListNotifications.self) { [self] req, _ in
            count(Notifications.ListNotifications.type)
            let all = state.withLock { $0.notifications[req.recipientId] ?? [] }
            return .init(
                items: Array(all.reversed().prefix(req.page.limit)), nextCursor: nil, unreadCount: all.count
            )
        }
    }

    func stop() {
        auth.stop()
        profile.stop()
        notification.stop()
        delivery.shutdownGracefully()
        deliveryTask.cancel()
    }
}
