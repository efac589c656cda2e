import Foundation
import Shared
import Synchronization
import TestSupport

/// In-process stand-ins for AuthService, ProfileService and NotificationService, speaking the
/// real wire protocol (ServiceHost + outbox), so the gateway executable can be tested on its own:
/// known users and tokens, a notification list per recipient, and events on demand.
final class FakeBackends: Sendable {
    struct State {
        var users: [String: PublicUser] = [:]
        /// token → (userId, sessionId)
        var tokens: [String: (String, String)] = [:]
        var revoked: Set<String> = []
        var notifications: [String: [Graph.Notification]] = [:]
        var calls: [String: Int] = [:]
    }
    let context = ZMQContext()
    let auth: ServiceHost
    let profile: ServiceHost
    let notification: ServiceHost
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
        registerAuth()
        registerProfile()
        registerNotification()
        try auth.start()
        try profile.start()
        try notification.start()
    }

    /// The gateway's environment pointing at these hosts.
    var gatewayEnvironment: [String: String] {
        var env: [String: String] = [
            "GATEWAY_HOST": "127.0.0.1", "GATEWAY_PORT": "0", "DATA_DIR": directory,
        ]
        for (prefix, host) in [("AUTH", auth), ("PROFILE", profile), ("NOTIFICATION", notification)] {
            let (rpc, events) = host.boundEndpoints.withLock { $0 }
            env["\(prefix)_RPC_ENDPOINT"] = rpc
            env["\(prefix)_EVENTS_ENDPOINT"] = events
        }
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

    /// Stores a notification for `recipient` and publishes `notify.created`; returns its seq.
    @discardableResult
    func notify(_ recipient: String, from actor: String, type: String = "like") async throws -> Int64 {
        let n = state.withLock { s -> Graph.Notification in
            let seq = Int64((s.notifications["u-\(recipient)"]?.count ?? 0) + 1)
            let post =
                type == "follow"
                ? nil : Graph.Notification.PostRef(id: "p1", thumbnailURL: "https://img.example/p1.jpg")
            let n = Graph.Notification(
                id: "n-\(recipient)-\(seq)", seq: seq, type: type, detail: type == "like" ? "photo" : nil,
                createdAt: Timestamp.now(),
                read: false,
                actorId: "u-\(actor)", post: post, followState: type == "follow" ? .notFollowing : nil)
            s.notifications["u-\(recipient)", default: []].append(n)
            return n
        }
        _ = try await notificationDB.write { tx in
            try tx.emit(Graph.NotificationCreated(recipientId: "u-\(recipient)", notification: n))
        }
        return n.seq
    }

    /// Stores `n` like notifications for `recipient` and publishes them in one transaction.
    func notifyBurst(_ recipient: String, from actor: String, count n: Int) async throws {
        try await notifyBurst(Array(repeating: (recipient, actor), count: n))
    }

    /// Stores one like notification per (recipient, actor) pair and publishes them all in one
    /// transaction, in order.
    func notifyBurst(_ pairs: [(recipient: String, actor: String)]) async throws {
        let batch = state.withLock { s -> [(String, Graph.Notification)] in
            var out: [(String, Graph.Notification)] = []
            for (recipient, actor) in pairs {
                let seq = Int64((s.notifications["u-\(recipient)"]?.count ?? 0) + 1)
                let item = Graph.Notification(
                    id: "n-\(recipient)-\(seq)", seq: seq, type: "like", detail: "photo",
                    createdAt: Timestamp.now(), read: false, actorId: "u-\(actor)",
                    post: .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"), followState: nil)
                s.notifications["u-\(recipient)", default: []].append(item)
                out.append(("u-\(recipient)", item))
            }
            return out
        }
        _ = try await notificationDB.write { tx in
            for (recipient, item) in batch {
                _ = try tx.emit(Graph.NotificationCreated(recipientId: recipient, notification: item))
            }
        }
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
        auth.on(Auth.Register.self) { req, _ in
            return .init(
                identity: Identity(
                    id: "u-\(req.username)", username: req.username, email: req.email, version: 1),
                session: .init(token: "tok-new", sessionId: "s-new", expiresAt: "2999-01-01T00:00:00.000Z"))
        }
    }

    private func registerProfile() {
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
        notification.on(Graph.Header.self) { [self] req, _ in
            count(Graph.Header.type)
            return .init(
                userId: "u-\(req.username)", followers: 5, following: 7,
                followState: req.viewerId == "u-\(req.username)" ? .self : .following)
        }
        notification.on(Graph.NotificationsSince.self) { [self] req, _ in
            count(Graph.NotificationsSince.type)
            let all = state.withLock { $0.notifications[req.recipientId] ?? [] }
            return .init(
                items: Array(all.filter { $0.seq > req.afterSeq }.prefix(req.limit)),
                headSeq: all.last?.seq ?? 0)
        }
        notification.on(Graph.ListNotifications.self) { [self] req, _ in
            count(Graph.ListNotifications.type)
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
    }
}
