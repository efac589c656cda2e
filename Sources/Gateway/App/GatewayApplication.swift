import ServiceKit
import Support

/// The gateway as `buildApplication` makes it: its router, the dispatcher in front of it (the
/// HTTP server's responder), the HTTP server, and the services that run beside the server.
/// Nothing runs until `start()` (the server listens) and `run(with:logger:)`.
struct GatewayApplication: Sendable {
    let router: Router
    let dispatcher: Dispatcher
    let server: HTTPServer
    /// The notification streams open here: closed, and new ones refused, when the server stops.
    let hub: StreamHub
    let metrics: Metrics
    /// The services that run beside the HTTP server, in start order (stopped in reverse order,
    /// after the server): the back ends' feeds, the stream heartbeat and the heads check.
    let services: [(name: String, service: any Service)]

    /// Every route as `METHOD /template`, in the order registered (`Gateway --print-routes`).
    var routeList: [String] { router.routes.map { "\($0.method) \($0.template)" } }

    /// Binds the HTTP server's socket and starts its loop.
    /// - Returns: the port bound.
    /// - Throws: `ServerError` when the address cannot be bound.
    func start() throws -> Int { try server.start() }

    /// Runs the services and the HTTP server (`start()` first) until SIGTERM or SIGINT, one of
    /// them stopping, or cancellation; then stops the HTTP server first (its streams closed),
    /// then `extra` and the services, in reverse start order (`ServiceGroup`).
    /// - Parameter extra: services to start after the application's own, before the HTTP
    ///   server (the executable's readiness announcement).
    /// - Throws: what a service that failed threw.
    func run(with extra: [(name: String, service: any Service)] = [], logger: Logger) async throws {
        let http: (name: String, service: any Service) = ("http", StreamClosingServer(server: server, hub: hub))
        _ = try await ServiceGroup(services: services + extra + [http], logger: logger).run()
    }

    /// Answers one request in process, as the server hands it over (routed once, from its
    /// head), without sockets: for tests. The route's body limit is not applied (the server
    /// refuses a longer body before it is read).
    func respond(to request: HTTPRequest) async -> HTTPResponse {
        await dispatcher.route(request.method, path: request.path, headers: request.headers).respond(request)
    }
}
