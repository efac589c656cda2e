import Shared

/// The handlers for the `Auth` namespace, sharing the database, the password hasher and the
/// configuration. Each is a method named for its message; `install(on:)` registers them all.
struct AuthHandlers: Sendable {
    let database: Database
    let hasher: PasswordHasher
    let throttle: LoginThrottle
    let logger: Logger
    /// Session lifetime in ms.
    let sessionTTLMs: Int64

    init(database: Database, hasher: PasswordHasher, configuration: AuthConfiguration, logger: Logger) {
        self.database = database
        self.hasher = hasher
        self.logger = logger
        self.sessionTTLMs = Int64(configuration.sessionTTLSeconds) * 1000
        self.throttle = LoginThrottle(
            database: database, maxFailures: configuration.loginMaxFailures,
            windowMs: Int64(configuration.loginWindowSeconds) * 1000)
    }

    /// Registers every `Auth` handler on `host`.
    func install(on host: ServiceHost) {
        host.on(Auth.Register.self) { request, context in try await register(request, context) }
        host.on(Auth.Login.self) { request, context in try await login(request, context) }
        host.on(Auth.Logout.self) { request, _ in try await logout(request) }
        host.on(Auth.Validate.self) { request, _ in try await validate(request) }
        host.on(Auth.LookupUsers.self) { request, _ in try await lookupUsers(request) }
        host.on(Auth.ChangeIdentity.self) { request, _ in try await changeIdentity(request) }
    }

    static let invalidToken = ServiceError.unauthorized(
        "invalid_token", "the token is unknown, expired or revoked")
    static let invalidCredentials = ServiceError.unauthorized(
        "invalid_credentials", "wrong login or password")
}
