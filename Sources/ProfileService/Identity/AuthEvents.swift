import Shared

/// Keeps the identity replica up to date from AuthService's events (`auth.user.registered`,
/// `auth.user.changed`), exactly once and in order: each event is applied, if its version is
/// newer, in the same transaction that advances the `auth` cursor.
enum AuthEvents {
    static func subscriber(runtime: ServiceRuntime, database: Database, auth: RPCClient)
        -> EventSubscriber
    {
        EventSubscriber(
            producer: "auth", eventsEndpoint: ServiceEndpoints.auth(runtime.env).events,
            context: runtime.context, replay: auth,
            logger: runtime.logger, security: runtime.security,
            startAfter: {
                try await database.read {
                    try $0.queryOne("SELECT seq FROM event_cursor WHERE producer = 'auth'")?.int(0) ?? 0
                }
            },
            deliver: { event in
                let identity: Identity?
                switch event.header.type {
                case Auth.UserRegistered.type:
                    identity = try event.decode(Auth.UserRegistered.self).identity
                case Auth.IdentityChanged.type:
                    identity = try event.decode(Auth.IdentityChanged.self).identity
                default: identity = nil
                }
                try await database.write { tx in
                    if let identity { try UserRows.apply(identity, tx) }
                    try tx.setCursor(event.header.seq, for: "auth")
                }
            })
    }
}
