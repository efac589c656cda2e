import Shared

/// ProfileService: profiles, posts, likes, comments, tags and settings; publishes `profile.*`
/// events; keeps a replica of AuthService's identities (`ServiceDescription.profile`:
/// `PROFILE_*` variables, ports 5553 / 5554).
struct ProfileApp: ServiceApp {
    static let description = ServiceDescription.profile
    static let migrations = ProfileSchema.migrations
    static let legacyMigrations = ProfileSchema.legacy

    let replica: IdentityReplica
    let profiles: ProfileHandlers
    let posts: PostHandlers
    let engagement: EngagementHandlers
    let settings: SettingsHandlers

    /// - Throws: `ZMQError` when AuthService's endpoint is invalid.
    init(runtime: ServiceRuntime, database: Database) throws {
        self.init(
            configuration: ProfileConfiguration(env: runtime.env), database: database,
            auth: try runtime.client(for: .auth))
    }

    /// Builds the service (also what the in-process tests use).
    init(configuration: ProfileConfiguration, database: Database, auth: RPCClient) {
        let replica = SQLiteProfileStore.replica(database: database, auth: auth)
        let users = SQLiteProfileStore(database: database, replica: replica)
        let postStore = SQLitePostStore(database: database)
        let engagementStore = SQLiteEngagementStore(database: database)
        self.replica = replica
        profiles = ProfileHandlers(users: users, posts: postStore, auth: auth)
        posts = PostHandlers(users: users, posts: postStore)
        engagement = EngagementHandlers(users: users, engagement: engagementStore)
        settings = SettingsHandlers(users: users, screen: SettingsScreen(configuration: configuration))
    }

    func register(on host: ServiceHost) {
        profiles.register(on: host)
        posts.register(on: host)
        engagement.register(on: host)
        settings.register(on: host)
    }

    func subscribe(_ events: EventSubscriptions) throws {
        try events.subscribe(to: .auth) { replica.subscribe($0) }
    }
}
