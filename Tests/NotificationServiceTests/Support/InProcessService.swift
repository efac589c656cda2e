import APNs
import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import TestSupport
import Transport

@testable import NotificationService

/// A temporary NotificationService database with the service's migrations.
enum TestDatabase {
    /// Opens `<directory>/notification.sqlite` as the service does.
    /// - Throws: `DatabaseError`.
    static func open(in directory: String) throws -> Database {
        try Database(
            location: try TestStorage.location(directory, "notification"), producer: "notification",
            migrations: NotificationSchema.migrations, legacy: NotificationSchema.legacy)
    }

    /// A fresh database in a new temporary directory.
    static func make() throws -> Database { try open(in: makeTemporaryDirectory("notification-store")) }
}

/// NotificationService built in-process as `NotificationApp.init(database:auth:logger:configuration:publisher:)`
/// builds it, on a temporary database, recording what it delivers, with a fake AuthService on loopback answering
/// `auth.lookup_users` (TestSupport's `FakeAuth`). No process, and no subscriber unless a test
/// adds one (`ProfileFeed`); handlers are called directly.
final class InProcessService: Sendable {
    static let logger = Logger(service: "notification-test", minimum: .error)

    let directory: String
    let context = ZMQContext()
    let database: Database
    let auth: FakeAuth
    let authClient: RPCClient
    let app: NotificationApp
    /// What the service delivered.
    let delivered = DeliveryRecorder()

    /// - Parameters:
    ///   - fanOutBatch: rows per fan-out transaction (`FanOutWorker.batch`).
    ///   - push: the push transport and queue (nil: push off); the sender is not started, tests
    ///     call `PushSender.step()`.
    ///   - accountBatch: rows per transaction of the account worker (`AccountWorker.batch`).
    ///   - directory: an existing service's directory to open again (a restart), nil: a new one.
    init(
        fanOutBatch: Int = 2_000, accountBatch: Int = 1_000, push: (transport: any PushTransport, queue: PushQueue)? = nil,
        directory: String? = nil
    ) async throws {
        self.directory = directory ?? makeTemporaryDirectory("notification-inprocess")
        database = try TestDatabase.open(in: self.directory)
        auth = try FakeAuth(context: context, directory: self.directory)
        let bound = try auth.start()
        authClient = try RPCClient(
            service: "auth", endpoint: bound.rpc, context: context, logger: Self.logger, defaultTimeoutMs: 10_000)
        try await waitUntilReachable(authClient, timeoutMs: 60_000)
        var configuration = NotificationConfiguration()
        configuration.fanOutBatch = fanOutBatch
        configuration.erasureBatch = accountBatch
        app = NotificationApp(
            database: database, auth: authClient, logger: Self.logger, configuration: configuration,
            publisher: delivered.publisher, push: push)
    }

    func stop() {
        authClient.shutdown()
        auth.stop()
    }

    // MARK: Users

    /// Registers users at the fake AuthService (ids `u-<name>`, version 1) and, unless
    /// `inReplica` is false, in the service's identity replica as an `auth.user.registered`
    /// event would (with false, only `auth.lookup_users` knows them).
    @discardableResult
    func users(_ names: [String], inReplica: Bool = true) async throws -> [Identity] {
        let identities = try await auth.register(names, publish: false)
        if inReplica {
            let replica = app.replica
            try await database.write { tx in
                for identity in identities { try replica.apply(identity, in: tx) }
            }
        }
        return identities
    }

    func user(_ name: String, inReplica: Bool = true) async throws -> Identity {
        try await users([name], inReplica: inReplica)[0]
    }

    // MARK: Graph

    @discardableResult
    func follow(_ follower: Identity, _ username: String, notifyPosts: Bool? = nil) async throws -> Notifications.Follow.Reply {
        try await app.graph.follow(.init(followerId: follower.id, username: username, notifyPosts: notifyPosts))
    }

    @discardableResult
    func unfollow(_ follower: Identity, _ username: String) async throws -> Notifications.Unfollow.Reply {
        try await app.graph.unfollow(.init(followerId: follower.id, username: username))
    }

    func header(_ viewer: Identity, _ username: String) async throws -> Notifications.Header.Reply {
        try await app.graph.header(.init(viewerId: viewer.id, username: username))
    }

    func edges(
        _ viewer: Identity, _ username: String, following: Bool = false, limit: Int = 20, cursor: String? = nil
    ) async throws -> Page<Notifications.Entry> {
        try await app.graph.listEdges(
            .init(viewerId: viewer.id, username: username, following: following, page: .init(limit: limit, cursor: cursor)))
    }

    // MARK: Account states

    /// Applies `state` (version `version`) as the gateway's `notification.apply_account_state` does.
    func setState(_ user: Identity, _ state: Auth.AccountState, version: Int64) async throws {
        try await app.accounts.apply(.init(userId: user.id, state: state, version: version))
    }

    /// Runs the account worker's batches until no job is left (at most `limit` batches).
    /// - Returns: what each batch did.
    @discardableResult
    func runAccountJobs(limit: Int = 100_000) async throws -> [AccountWorker.Outcome] {
        var outcomes: [AccountWorker.Outcome] = []
        while outcomes.count < limit, let outcome = try await app.accountWorker.step() { outcomes.append(outcome) }
        return outcomes
    }

    /// The user's key in the service's database.
    func key(_ user: Identity) async throws -> Int64 {
        let id = user.id
        return try await database.read { c in
            guard let key = try Keys.existingUser(id, on: c) else { throw TestSupportError("no key for user \(id)") }
            return key
        }
    }

    // MARK: Notifications

    func notifications(_ user: Identity, limit: Int = 100, cursor: String? = nil) async throws
        -> Notifications.ListNotifications.Reply
    {
        try await app.notifications.list(.init(recipientId: user.id, page: .init(limit: limit, cursor: cursor)))
    }

    /// Every notification of `user`, newest first, through all pages of `pageSize`.
    func allNotifications(_ user: Identity, pageSize: Int = 20) async throws -> [Notifications.Notification] {
        var items: [Notifications.Notification] = []
        var cursor: String? = nil
        repeat {
            let page = try await notifications(user, limit: pageSize, cursor: cursor)
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    func markRead(_ user: Identity, upTo seq: Int64) async throws -> Int {
        try await app.notifications.markRead(.init(recipientId: user.id, upToSeq: seq)).unreadCount
    }

    func since(_ user: Identity, after seq: Int64, limit: Int = 100) async throws -> Notifications.NotificationsSince.Reply {
        try await app.notifications.since(.init(recipientId: user.id, afterSeq: seq, limit: limit))
    }

    /// The notifications delivered so far, in order, with their recipients.
    func published() async throws -> [(recipientId: String, notification: Notifications.Notification)] {
        try await delivered.notifications(in: database)
    }

    /// Event types in the service's outbox, oldest first.
    func outboxTypes() async throws -> [String] {
        try await database.outbox(after: 0, limit: 100_000).events.map(\.type)
    }
}
