import Shared

/// ProfileService's handlers and what they share: the database, the identity directory (replica
/// with AuthService fallback), the AuthService client and the settings configuration.
struct ProfileService: Sendable {
    let database: Database
    let directory: UserDirectory
    let auth: RPCClient
    let settings: SettingsConfig
    let logger: Logger

    /// Registers a handler for every message in the `Profile` namespace.
    func register(on host: ServiceHost) {
        registerProfiles(on: host)
        registerPosts(on: host)
        registerEngagement(on: host)
        registerSettings(on: host)
    }
}
