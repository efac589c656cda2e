import BackendKit
import CSodium
import Messages
import ServiceKit
import Storage
import Support
import Wire

/// AuthService: accounts, password hashes, sessions and account states; publishes `auth.*`
/// events; applies ProfileService's `profile.account.redacted`, the last step of an
/// account's deletion (`ServiceDescription.auth`: `AUTH_*` variables, ports 5551 / 5552).
struct AuthApp: ServiceApp {
    static let description = ServiceDescription.auth
    static let migrations = AuthSchema.migrations
    static let legacyMigrations = AuthSchema.legacy

    let accounts: AccountHandlers
    let sessions: SessionHandlers
    let imports: ImportHandlers
    let lifecycle: LifecycleHandlers
    let purge: SessionPurge
    let clock: Clock
    let logger: Logger

    /// - Throws: `ConfigurationError` for a bad `AUTH_*` variable, `ServiceError` when libsodium
    ///   cannot start.
    init(runtime: ServiceRuntime, database: Database) throws {
        guard sodium_init() >= 0 else { throw ServiceError.internal("sodium_init failed") }
        let configuration = try AuthConfiguration(env: runtime.env)
        try self.init(configuration: configuration, database: database, logger: runtime.logger)
    }

    /// Builds the service from a configuration (also what the in-process tests use).
    /// - Throws: `ServiceError` when the password hasher cannot start.
    init(configuration: AuthConfiguration, database: Database, logger: Logger, clock: Clock = .system) throws {
        let hasher = try PasswordHasher(
            concurrency: configuration.hashConcurrency, queueLimit: configuration.hashQueueLimit)
        let accountStore = SQLAccountStore(database: database)
        let sessionStore = SQLSessionStore(database: database)
        let throttle = LoginThrottle(
            store: SQLLoginFailureStore(database: database), policy: configuration.throttlePolicy, clock: clock)
        let sessionTTLMs = Int64(configuration.sessionTTLSeconds) * 1000
        accounts = AccountHandlers(
            accounts: accountStore, sessions: sessionStore, hasher: hasher, sessionTTLMs: sessionTTLMs, clock: clock,
            words: configuration.words)
        if !configuration.words.isEmpty {
            logger.info(
                "moderation.words", metadata: ["terms": "\(configuration.words.count)", "setting": WordList.variable])
        }
        sessions = SessionHandlers(
            accounts: accountStore, sessions: sessionStore, hasher: hasher, throttle: throttle,
            sessionTTLMs: sessionTTLMs, clock: clock)
        imports = ImportHandlers(
            accounts: accountStore, sessions: sessionStore, imports: Imports(allowed: configuration.allowImports),
            sessionTTLMs: sessionTTLMs, clock: clock)
        lifecycle = LifecycleHandlers(
            lifecycle: SQLAccountLifecycleStore(database: database), hasher: hasher, throttle: throttle, clock: clock)
        self.clock = clock
        self.logger = logger
        if configuration.allowImports { logger.warning("imports.allowed", metadata: ["setting": "ALLOW_IMPORTS"]) }
        purge = SessionPurge(
            store: sessionStore, intervalSeconds: configuration.sessionPurgeSeconds, logger: logger, clock: clock)
    }

    /// `AuthService moderator grant|revoke|list` (`ModeratorCommand`).
    static func command(_ arguments: [String]) async -> Int32? {
        await ModeratorCommand.run(arguments)
    }

    func register(on host: ServiceHost) {
        accounts.register(on: host)
        sessions.register(on: host)
        imports.register(on: host)
        lifecycle.register(on: host)
    }

    /// The deletion saga's last step comes from ProfileService (`Auth` in Messages).
    func subscribe(_ events: EventSubscriptions) throws {
        let (clock, logger) = (self.clock, self.logger)
        try events.subscribe(to: .profile) { LifecycleHandlers.subscribe($0, clock: clock, logger: logger) }
    }

    func backgroundServices() -> [(name: String, service: any Service)] {
        [("sessions.purge", purge)]
    }
}
