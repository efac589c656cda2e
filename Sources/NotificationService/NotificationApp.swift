import Shared

/// NotificationService: the follow graph and notifications; applies AuthService's events (its
/// identity replica) and ProfileService's (likes, comments, tags, new posts); publishes
/// `graph.*` and `notify.*` events (`ServiceDescription.notification`: `NOTIFICATION_*`
/// variables, ports 5555 / 5556).
struct NotificationApp: ServiceApp {
    static let description = ServiceDescription.notification
    static let migrations = NotificationSchema.migrations
    static let legacyMigrations = NotificationSchema.legacy

    let replica: IdentityReplica
    let graph: GraphHandlers
    let notifications: NotificationHandlers
    let profileEvents: ProfileEventHandlers
    let fanOut: FanOutWorker

    /// - Throws: `ZMQError` when AuthService's endpoint is invalid.
    init(runtime: ServiceRuntime, database: Database) throws {
        self.init(database: database, auth: try runtime.client(for: .auth), logger: runtime.logger)
    }

    /// Builds the service (also what the in-process tests use).
    init(database: Database, auth: RPCClient, logger: Logger, fanOutBatch: Int = 2_000) {
        let replica = IdentityReplica(database: database, auth: auth, keepsEmail: false)
        let follows = SQLiteFollowStore(database: database)
        let store = SQLiteNotificationStore(database: database)
        let fanOut = FanOutWorker(database: database, batch: fanOutBatch, logger: logger)
        self.replica = replica
        self.fanOut = fanOut
        graph = GraphHandlers(replica: replica, follows: follows)
        notifications = NotificationHandlers(store: store)
        profileEvents = ProfileEventHandlers(fanOut: fanOut)
    }

    func register(on host: ServiceHost) {
        graph.register(on: host)
        ImportHandlers(replica: replica).register(on: host)
        notifications.register(on: host)
    }

    func subscribe(_ events: EventSubscriptions) throws {
        try events.subscribe(to: .auth) { replica.subscribe($0) }
        try events.subscribe(to: .profile) { profileEvents.subscribe($0) }
    }

    func backgroundServices() -> [(name: String, service: any Service)] {
        [("fanout", fanOut)]
    }
}
