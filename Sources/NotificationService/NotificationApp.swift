import APNs
import BackendKit
import ServiceKit
import Storage
import Support

/// NotificationService: the follow graph and notifications; applies AuthService's events (its
/// identity replica, account states) and ProfileService's (likes, comments, tags, new posts,
/// erased accounts); publishes
/// `notification.*` events on its PUB socket and each notification, routed by recipient, on its
/// delivery socket (`ServiceDescription.notification`: `NOTIFICATION_*` variables, ports
/// 5555 / 5556 / 5557).
struct NotificationApp: ServiceApp {
    static let description = ServiceDescription.notification
    static let migrations = NotificationSchema.migrations
    static let legacyMigrations = NotificationSchema.legacy

    let replica: IdentityReplica
    let graph: GraphHandlers
    let notifications: NotificationHandlers
    let profileEvents: ProfileEventHandlers
    let jobs: FanOutWorker
    /// Suspensions, their end and erasures (`AccountWorker`), and what starts them.
    let accountWorker: AccountWorker
    let accounts: AccountHandlers
    let pruner: RetentionPruner
    let merger: RecentMerger
    let devices: DeviceHandlers
    /// Drains the push queue to APNs (nil: push is off).
    let sender: PushSender?
    /// The delivery socket (nil when built without one, in-process tests).
    let delivery: TopicPublisher?
    let deliveryEndpoint: String?
    /// The bulk imports (refused unless `ALLOW_IMPORTS`).
    let imports: ImportHandlers

    /// Reads `NotificationConfiguration` and binds the delivery socket (`NOTIFICATION_DELIVERY_BIND`).
    /// - Throws: `ConfigurationError`, or `ZMQError` when an endpoint is invalid or in use.
    init(runtime: ServiceRuntime, database: Database) throws {
        let configuration = try NotificationConfiguration(env: runtime.env)
        let delivery = TopicPublisher(
            name: "notification.delivery", context: runtime.context,
            bind: ServiceDescription.notification.binds(runtime.env).delivery ?? "tcp://127.0.0.1:5557",
            logger: runtime.logger, security: runtime.security,
            sendHighWaterMark: Int32(configuration.deliveryHighWaterMark))
        let endpoint = try delivery.bind()
        let transport = try PushTransports.make(env: runtime.env, logger: runtime.logger)
        self.init(
            database: database, auth: try runtime.client(for: .auth), logger: runtime.logger,
            configuration: configuration, publisher: NotificationPublisher(delivery), delivery: delivery,
            deliveryEndpoint: endpoint,
            push: transport.map { ($0.transport, PushQueue(environments: $0.environments)) })
    }

    /// Builds the service (also what the in-process tests use, with `publisher` collecting what
    /// would be delivered).
    /// - Parameter push: the APNs transport and the queue's clock and doorbell; nil: push is off
    ///   (devices can still be registered; nothing is queued or sent).
    init(
        database: Database, auth: RPCClient, logger: Logger, configuration: NotificationConfiguration = .init(),
        publisher: NotificationPublisher = .none, delivery: TopicPublisher? = nil, deliveryEndpoint: String? = nil,
        push: (transport: any PushTransport, queue: PushQueue)? = nil
    ) {
        let replica = IdentityReplica(database: database, auth: auth, keepsEmail: false)
        let writer = NotificationWriter(delivery: publisher, push: push?.queue)
        let queue = push?.queue ?? PushQueue()
        devices = DeviceHandlers(store: DeviceStore(database: database, clock: queue.clock))
        if let push {
            sender = PushSender(
                database: database, transport: push.transport, queue: push.queue, logger: logger,
                batch: configuration.pushBatch, leaseMs: Int64(configuration.pushLeaseSeconds) * 1_000)
        } else {
            sender = nil
        }
        let jobs = FanOutWorker(database: database, notifications: writer, batch: configuration.fanOutBatch, logger: logger)
        let accountWorker = AccountWorker(
            database: database, batch: configuration.erasureBatch, logger: logger,
            hold: TestHold(path: configuration.erasureHoldFile))
        self.accountWorker = accountWorker
        accounts = AccountHandlers(database: database, worker: accountWorker)
        self.replica = replica
        self.jobs = jobs
        self.delivery = delivery
        self.deliveryEndpoint = deliveryEndpoint
        imports = ImportHandlers(replica: replica, imports: Imports(allowed: configuration.allowImports))
        if configuration.allowImports { logger.warning("imports.allowed", metadata: ["setting": "ALLOW_IMPORTS"]) }
        graph = GraphHandlers(
            replica: replica, follows: SQLFollowStore(database: database, notifications: writer),
            safety: SafetyStore(database: database, notifications: writer))
        notifications = NotificationHandlers(store: SQLNotificationStore(database: database))
        profileEvents = ProfileEventHandlers(notifications: writer, jobs: jobs)
        merger = RecentMerger(
            database: database, intervalMs: Int64(configuration.mergeIntervalMs), batch: configuration.mergeBatch,
            logger: logger)
        pruner = RetentionPruner(
            database: database, policy: configuration.retention,
            intervalMs: Int64(configuration.pruneIntervalSeconds) * 1_000, logger: logger)
    }

    func register(on host: ServiceHost) {
        graph.register(on: host)
        imports.register(on: host)
        notifications.register(on: host)
        devices.register(on: host)
        accounts.register(on: host)
        host.addCounters { accountWorker.counts() }
        if let delivery { host.addCounters { delivery.counters() } }
        if let sender { host.addCounters { sender.counts() } }
    }

    func subscribe(_ events: EventSubscriptions) throws {
        try events.subscribe(to: .auth) {
            replica.subscribe($0)
            devices.subscribe($0)
            accounts.subscribeAuth($0)
        }
        try events.subscribe(to: .profile) {
            profileEvents.subscribe($0)
            accounts.subscribeProfile($0)
        }
    }

    func backgroundServices() -> [(name: String, service: any Service)] {
        [("jobs", jobs), ("accounts", accountWorker), ("merge", merger), ("retention", pruner)]
    }

    /// Every replica publishes what it writes on its own delivery socket, and sends pushes (the
    /// queue's leases keep N senders from sending a push twice, `PushSender`).
    func replicaServices() -> [(name: String, service: any Service)] {
        (delivery.map { [("delivery", $0)] } ?? []) + (sender.map { [("push", $0)] } ?? [])
    }

    func readyFields() -> [String: String] {
        deliveryEndpoint.map { ["delivery": $0] } ?? [:]
    }
}
