import ServiceKit
import Support

/// Builds the gateway from its configuration and its back ends, as Hummingbird's
/// `buildApplication(configuration)` does: the metrics, the stream hub, the token cache and the
/// live notifications; the controllers and their routes in one `Router`; the `Dispatcher` in
/// front of it; the `HTTPServer`; and the services to run beside it (the back ends' feeds, the
/// stream heartbeat, the heads check). Every call to a back end is counted in the metrics
/// (`MeteredBackend`).
/// - Parameters:
///   - configuration: the gateway's settings (`GatewayConfiguration`, read from the environment).
///   - backends: the services the gateway calls and the feeds of its live state:
///     `ServiceBackends` in the executable, fakes in a test.
///   - logger: the gateway's logger.
/// - Returns: the application, not started (`GatewayApplication.start()`, `run(with:logger:)`;
///   a test calls `respond(to:)`).
func buildApplication(_ configuration: GatewayConfiguration, backends: some GatewayBackends, logger: Logger)
    -> GatewayApplication
{
    let gauges = Locked<(hub: StreamHub?, server: HTTPServer?, live: LiveNotifications?)>((nil, nil, nil))
    let metrics = Metrics(gauges: {
        let (hub, server, live) = gauges.withLock { $0 }
        return Metrics.Gauges(
            streams: hub?.count ?? 0, connections: server?.openConnections ?? 0, channels: live?.channelCount ?? 0,
            responseBufferBytes: server?.responseBufferBytes ?? 0,
            responseBufferPeakBytes: server?.responseBufferPeakBytes ?? 0,
            connectionChecks: server?.connectionChecks ?? 0)
    })
    let auth = MeteredBackend(base: backends.auth, metrics: metrics)
    let profile = MeteredBackend(base: backends.profile, metrics: metrics)
    let notification = MeteredBackend(base: backends.notification, metrics: metrics)
    let hub = StreamHub(
        metrics: metrics, capacity: configuration.maxStreams, perUser: configuration.maxStreamsPerUser,
        perAddress: configuration.maxStreamsPerAddress, unlimitedAddresses: configuration.trustedProxies)
    let tokens = TokenCache(ttlMs: Int64(configuration.tokenCacheSeconds) * 1000)
    let sessions = SessionControl(tokens: tokens, hub: hub)
    let users = UserLookup(profile: profile)
    let live = LiveNotifications(notification: notification, users: users, metrics: metrics, logger: logger)
    hub.setOnRemove { live.detach($0) }
    let clientAddress = ClientAddress(trustedProxies: configuration.trustedProxies)
    let controllers: [any Controller] = [
        AuthController(
            auth: auth, profile: profile, notification: notification, sessions: sessions, clientAddress: clientAddress,
            passwordTimeoutMs: configuration.passwordTimeoutMs),
        UsersController(profile: profile, notification: notification, users: users),
        PostsController(profile: profile, notification: notification),
        SettingsController(profile: profile),
        MediaController(profile: profile),
        NotificationsController(
            notification: notification, users: users, hub: hub, live: live, logger: logger,
            streamBufferBytes: configuration.streamBufferBytes),
        DevicesController(notification: notification),
        OpsController(auth: auth, profile: profile, notification: notification, metrics: metrics),
        ModerationController(auth: auth, profile: profile),
        ModerationConsole(),
    ]
    var routes = RouteCollection()
    for controller in controllers { controller.register(&routes) }
    let router = Router(routes.routes)
    let dispatcher = Dispatcher(
        router: router, authenticator: Authenticator(auth: auth, tokens: tokens), clientAddress: clientAddress,
        metrics: metrics, logger: logger)
    let server = HTTPServer(
        configuration: .init(
            host: configuration.host, port: configuration.port, maxConnections: configuration.maxConnections,
            maxConnectionsPerPeer: configuration.maxConnectionsPerAddress,
            firstByteTimeoutSeconds: configuration.firstByteTimeoutSeconds,
            streamWriteTimeoutSeconds: configuration.streamWriteTimeoutSeconds,
            idleTimeoutSeconds: configuration.connectionTimeoutSeconds,
            requestTimeoutSeconds: configuration.requestTimeoutSeconds,
            maxLargeBodyBytesInFlight: configuration.uploadBudgetBytes,
            maxLargeBodyBytesPerPeer: configuration.uploadBudgetPerAddressBytes, sharedPeers: configuration.trustedProxies,
            minUploadBytesPerSecond: configuration.uploadMinBytesPerSecond,
            uploadRateWindowSeconds: configuration.uploadRateWindowSeconds,
            maxResponseBufferBytes: configuration.responseBufferBytes,
            maxResponseBufferBytesPerPeer: configuration.responseBufferPerAddressBytes),
        logger: logger, responder: dispatcher, loop: backends.loop)
    server.drive(backends.drivenClients)
    gauges.withLock { $0 = (hub, server, live) }
    let heartbeat = ServiceClosure {
        while !Task.isCancelled {
            // A little under the interval, so the gap between comments never exceeds it.
            try? await Task.sleep(for: .milliseconds(configuration.heartbeatSeconds * 1_000 - 250))
            if !Task.isCancelled { hub.heartbeat() }
        }
    }
    let headsCheck = ServiceClosure {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(configuration.streamCheckMs))
            if !Task.isCancelled { await live.checkHeads() }
        }
    }
    return GatewayApplication(
        router: router, dispatcher: dispatcher, server: server, hub: hub, metrics: metrics,
        services: backends.feeds(live: live, sessions: sessions) + [("heartbeat", heartbeat), ("streams.check", headsCheck)])
}
