import Foundation
import ServiceKit
import Storage
import Support

/// A back-end service in the one shape every service has: a description (name, environment
/// prefix, default ports), its migrations, its request handlers, its event subscriptions and
/// its background work. `ServiceRunner.run` does the rest: configuration, database, host,
/// subscribers, the READY line and graceful shutdown.
///
/// A service's `main.swift` is one line: `exit(await ServiceRunner.run(AuthApp.self))`.
public protocol ServiceApp: Sendable {
    /// Name, environment prefix and default ports (one of `ServiceDescription.all`).
    static var description: ServiceDescription { get }
    /// The service's migrations, oldest first (the shared outbox tables come first on their own).
    static var migrations: [Migration] { get }
    /// The leading migrations a pre-migrator database's `user_version` stands for (see `Migrator`).
    static var legacyMigrations: [Migration] { get }

    /// Builds the service: reads its configuration and makes its clients and stores.
    /// - Throws: `ConfigurationError` naming a bad variable, or any error that should stop start-up.
    init(runtime: ServiceRuntime, database: Database) throws

    /// Registers a handler for every request type the service answers (`host.on(...)`).
    func register(on host: ServiceHost)

    /// The producers whose events the service applies, and its typed handlers for them
    /// (`try events.subscribe(to: .auth) { $0.on(Auth.UserRegistered.self) { event, tx in ... } }`).
    /// - Throws: `ZMQError` when a producer's endpoint is invalid.
    func subscribe(_ events: EventSubscriptions) throws

    /// Work that runs beside the host (purges, pruning), started first and stopped last: only
    /// in the active replica (see `Leadership`), so each job runs once across replicas. Each
    /// must support being run again after a cancelled run (a replica that stands down and is
    /// elected again).
    func backgroundServices() -> [(name: String, service: any Service)]

    /// Work that runs in every replica (e.g. a socket that publishes what this replica writes).
    func replicaServices() -> [(name: String, service: any Service)]

    /// Endpoints the service bound itself (beyond the host's `rpc` and `events`), added to the
    /// READY line, e.g. `["delivery": "tcp://127.0.0.1:5557"]`.
    func readyFields() -> [String: String]

    /// An operator command the executable answers instead of running the service (as every
    /// executable answers `keygen`), e.g. `AuthService moderator grant alice`: it may open the
    /// service's database with `ServiceDatabase.open`.
    /// - Parameter arguments: the command line, the executable's path first.
    /// - Returns: nil when `arguments` name no command of this service; else the exit status.
    static func command(_ arguments: [String]) async -> Int32?
}

extension ServiceApp {
    public static var legacyMigrations: [Migration] { [] }
    public func subscribe(_ events: EventSubscriptions) throws {}
    public func backgroundServices() -> [(name: String, service: any Service)] { [] }
    public func replicaServices() -> [(name: String, service: any Service)] { [] }
    public func readyFields() -> [String: String] { [:] }
    public static func command(_ arguments: [String]) async -> Int32? { nil }
}

/// The subscriptions a service declares (see `ServiceApp.subscribe`).
public final class EventSubscriptions: Sendable {
    private let runtime: ServiceRuntime
    private let database: Database
    let subscribers = Locked<[EventSubscriber]>([])

    init(runtime: ServiceRuntime, database: Database) {
        self.runtime = runtime
        self.database = database
    }

    /// Subscribes to `producer`'s events (at its configured endpoint, replaying through an RPC
    /// client to it) and lets `register` add the typed handlers.
    /// - Throws: `ZMQError` when the producer's endpoint is invalid.
    public func subscribe(to producer: ServiceDescription, _ register: (EventSubscriber) -> Void) throws {
        let subscriber = EventSubscriber(
            producer: producer, endpoint: producer.endpoints(runtime.env).events, context: runtime.context,
            replay: try runtime.client(for: producer), database: database, logger: runtime.logger,
            security: runtime.security)
        register(subscriber)
        subscribers.withLock { $0.append(subscriber) }
    }
}

/// Starts a `ServiceApp` and runs it until SIGTERM/SIGINT.
public enum ServiceRunner {
    /// Answers `keygen` and the service's own commands (`ServiceApp.command`), reads the
    /// environment, opens the service's database
    /// (`<PREFIX>_DATABASE_URL`: `sqlite:<path>`, by default `<DATA_DIR>/<name>.sqlite`, or a
    /// `postgres://` URL; `<PREFIX>_DATABASE_POOL` reader connections: 2 on SQLite, 8 on PostgreSQL) with the service's migrations, hosts it on `<PREFIX>_RPC_BIND` / `<PREFIX>_EVENTS_BIND`, starts its
    /// subscribers and background work, prints the READY line, and runs until a signal; then
    /// stops the host (in-flight requests answered), the subscribers and the background work,
    /// in that order, within a second.
    /// - Returns: the process exit status: 0 after a clean stop, 1 when it failed, 2 for a bad
    ///   configuration (the log line names the variable).
    public static func run<App: ServiceApp>(_ app: App.Type) async -> Int32 {
        if let status = KeygenCommand.run() { return status }
        if let status = await App.command(CommandLine.arguments) { return status }
        let description = App.description
        let runtime: ServiceRuntime
        do {
            runtime = try ServiceRuntime(name: description.name)
        } catch {
            Logger(service: description.name).error("config.invalid", metadata: ["error": "\(error)"])
            return 2
        }
        let logger = runtime.logger
        do {
            let location: DatabaseLocation
            let pool: Int
            do {
                location = try ServiceDatabase.location(description, env: runtime.env)
                // Reads on PostgreSQL wait on round trips, not on a core: more connections.
                pool = try runtime.env.int(
                    "\(description.envPrefix)_DATABASE_POOL", default: location.defaultReaders, range: 1...64)
            } catch {
                logger.error("config.invalid", metadata: ["error": "\(error)"])
                return 2
            }
            logger.info("database.open", metadata: ["location": "\(location)"])
            let database = try Database(
                location: location, producer: description.name, migrations: App.migrations,
                legacy: App.legacyMigrations, readers: pool)
            let service: App
            do {
                service = try App(runtime: runtime, database: database)
            } catch let error as ConfigurationError {
                logger.error("config.invalid", metadata: ["error": "\(error)"])
                return 2
            }
            let binds = description.binds(runtime.env)
            // On PostgreSQL any number of replicas share the database: the elected one publishes
            // the outbox from the table, applies events and runs the jobs (see `Leadership`).
            let relayed = location.isShared
            let host = ServiceHost(
                name: description.name, context: runtime.context, rpcBind: binds.rpc, eventsBind: binds.events,
                database: database, logger: logger, security: runtime.security, relayed: relayed)
            service.register(on: host)
            let events = EventSubscriptions(runtime: runtime, database: database)
            try service.subscribe(events)
            let subscribers = events.subscribers.withLock { $0 }
            for subscriber in subscribers { host.addCounters { subscriber.counters() } }
            let leadership = Leadership(location: location, logger: logger)
            host.addCounters { leadership.counters() }
            var activeOnly = service.backgroundServices() + subscribers.map { ("subscriber.\($0.producer.name)", $0) }
            if relayed {
                let relay = OutboxRelay(database: database, host: host, logger: logger)
                database.setPublisher { _ in relay.doorbell.ring() }
                leadership.onOutboxNotification { relay.doorbell.ring() }
                activeOnly.append(("outbox.relay", relay))
            }
            let bound = try host.start()
            runtime.announceReady(service.readyFields().merging(["rpc": bound.rpc, "events": bound.events]) { $1 })
            let services: [(name: String, service: any Service)] =
                [("leadership", leadership)] + service.replicaServices() + [
                    ("active", LeaderOnly(leadership: leadership, services: activeOnly, logger: logger)), ("host", host),
                ]
            try await ServiceGroup(services: services, logger: logger).run()
            runtime.context.shutdown()
            logger.info("service.stopped")
            return 0
        } catch {
            logger.error("service.failed", metadata: ["error": "\(error)"])
            runtime.context.shutdown()
            return 1
        }
    }
}
