import Shared

/// ProfileService: profiles, posts, likes, comments, tags and settings (see `Profile` in Shared).
let runtime = ServiceRuntime(name: "profile")
await runtime.runStandard(
    envPrefix: "PROFILE", rpcPort: 5553, eventsPort: 5554, migrations: Schema.migrations
) { host, database in
    let auth = try runtime.client("auth", ServiceEndpoints.auth(runtime.env))
    let service = ProfileService(
        database: database, directory: UserDirectory(database: database, auth: auth), auth: auth,
        settings: SettingsConfig(env: runtime.env), logger: runtime.logger)
    service.register(on: host)
    let subscriber = AuthEvents.subscriber(runtime: runtime, database: database, auth: auth)
    host.addCounters { subscriber.counters() }
    return [ServiceClosure { try await subscriber.run() }]
}
