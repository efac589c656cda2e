import Shared

// NotificationService: the follow graph and notifications. Consumes AuthService's events (the
// users replica) and ProfileService's (likes, comments, tags, new posts); see ../shared/API.md.
let runtime = ServiceRuntime(name: "notification")
await runtime.runStandard(
    envPrefix: "NOTIFICATION", rpcPort: 5555, eventsPort: 5556, migrations: Schema.migrations
) {
    host, database in
    let authEndpoints = ServiceEndpoints.auth(runtime.env)
    let profileEndpoints = ServiceEndpoints.profile(runtime.env)
    let authClient = try runtime.client("auth", authEndpoints)
    let profileClient = try runtime.client("profile", profileEndpoints)
    let users = UserDirectory(database: database, auth: authClient)
    GraphHandlers(database: database, users: users).register(on: host)

    @Sendable func cursor(_ producer: String) async throws -> Int64 {
        try await database.read { c in
            try c.queryOne("SELECT seq FROM event_cursor WHERE producer = ?", [producer])?.int(0) ?? 0
        }
    }
    let authSubscriber = EventSubscriber(
        producer: AuthEvents.producer, eventsEndpoint: authEndpoints.events, context: runtime.context,
        replay: authClient,
        logger: runtime.logger, security: runtime.security,
        startAfter: { try await cursor(AuthEvents.producer) },
        deliver: { event in try await AuthEvents.deliver(event, database: database) })
    let profileEvents = ProfileEvents(database: database, users: users, logger: runtime.logger)
    let profileSubscriber = EventSubscriber(
        producer: ProfileEvents.producer, eventsEndpoint: profileEndpoints.events,
        context: runtime.context,
        replay: profileClient, logger: runtime.logger, security: runtime.security,
        startAfter: { try await cursor(ProfileEvents.producer) },
        deliver: { event in try await profileEvents.deliver(event) },
        deliverBatch: { events in try await profileEvents.deliverBatch(events) })
    host.addCounters { authSubscriber.counters() }
    host.addCounters { profileSubscriber.counters() }
    return [
        ServiceClosure { try await authSubscriber.run() },
        ServiceClosure { try await profileSubscriber.run() },
    ]
}
