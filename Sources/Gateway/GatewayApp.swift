import Foundation
import Messages
import ServiceKit
import Support
import Transport
import Wire

/// The gateway: configuration, the three back ends, the controllers and their routes, the HTTP
/// server, the live event subscribers and the stream heartbeat, stopped in reverse order (the
/// HTTP server first) on SIGTERM/SIGINT.
enum GatewayApp {
    /// - Returns: the exit status (0 clean stop, 1 failure, 2 bad configuration).
    static func run() async -> Int32 {
        if let status = KeygenCommand.run() { return status }
        let runtime: ServiceRuntime
        let config: GatewayConfiguration
        do {
            runtime = try ServiceRuntime(name: "gateway")
            config = try GatewayConfiguration(runtime.env, fileLimit: raiseOpenFileLimit())
        } catch {
            Logger(service: "gateway").error("config.invalid", metadata: ["error": "\(error)"])
            return 2
        }
        let logger = runtime.logger
        do {
            let gauges = Locked<(hub: StreamHub?, server: HTTPServer?, live: LiveNotifications?)>((nil, nil, nil))
            let metrics = Metrics(gauges: {
                let (hub, server, live) = gauges.withLock { $0 }
                return Metrics.Gauges(
                    streams: hub?.count ?? 0, connections: server?.openConnections ?? 0, channels: live?.channelCount ?? 0,
                    responseBufferBytes: server?.responseBufferBytes ?? 0,
                    responseBufferPeakBytes: server?.responseBufferPeakBytes ?? 0,
                    connectionChecks: server?.connectionChecks ?? 0)
            })
            // The HTTP loop's thread runs the handlers and drives the back ends' sockets, so a
            // request's calls are sent and answered on it (see `LoopExecutor`, `RPCPump`).
            let loopWakeup = Wakeup()
            let loopExecutor = LoopExecutor(wakeup: loopWakeup)
            func backend(_ service: ServiceDescription) throws -> Backend {
                Backend(
                    client: try RPCClient(
                        service: service.name, endpoint: service.endpoints(runtime.env).rpc, context: runtime.context,
                        logger: logger, security: runtime.security, drivenBy: loopExecutor, wakeup: loopWakeup),
                    metrics: metrics, timeoutMs: config.rpcTimeoutMs)
            }
            let backends = Backends(
                auth: try backend(.auth), profile: try backend(.profile), notification: try backend(.notification))
            let hub = StreamHub(
                metrics: metrics, capacity: config.maxStreams, perUser: config.maxStreamsPerUser,
                perAddress: config.maxStreamsPerAddress, unlimitedAddresses: config.trustedProxies)
            let tokens = TokenCache(ttlMs: Int64(config.tokenCacheSeconds) * 1000)
            let sessions = SessionControl(tokens: tokens, hub: hub)
            let users = UserLookup(profile: backends.profile)
            let live = LiveNotifications(notification: backends.notification, users: users, metrics: metrics, logger: logger)
            hub.setOnRemove { live.detach($0) }
            let clientAddress = ClientAddress(trustedProxies: config.trustedProxies)
            let controllers: [any Controller] = [
                AuthController(
                    auth: backends.auth, profile: backends.profile, sessions: sessions, clientAddress: clientAddress,
                    passwordTimeoutMs: config.passwordTimeoutMs),
                UsersController(profile: backends.profile, notification: backends.notification, users: users),
                PostsController(profile: backends.profile, notification: backends.notification),
                SettingsController(profile: backends.profile),
                MediaController(profile: backends.profile),
                NotificationsController(
                    notification: backends.notification, users: users, hub: hub, live: live, logger: logger,
                    streamBufferBytes: config.streamBufferBytes),
                DevicesController(notification: backends.notification),
                OpsController(backends: backends, metrics: metrics),
            ]
            var routes = RouteCollection()
            for controller in controllers { controller.register(&routes) }
            let router = Router(routes.routes)
            if CommandLine.arguments.contains("--print-routes") {
                for route in router.routes { print("\(route.method) \(route.template)") }
                return 0
            }
            let dispatcher = Dispatcher(
                router: router, authenticator: Authenticator(auth: backends.auth, tokens: tokens),
                clientAddress: clientAddress, metrics: metrics, logger: logger)
            let server = HTTPServer(
                configuration: .init(
                    host: config.host, port: config.port, maxConnections: config.maxConnections,
                    maxConnectionsPerPeer: config.maxConnectionsPerAddress,
                    firstByteTimeoutSeconds: config.firstByteTimeoutSeconds,
                    streamWriteTimeoutSeconds: config.streamWriteTimeoutSeconds,
                    idleTimeoutSeconds: config.connectionTimeoutSeconds,
                    requestTimeoutSeconds: config.requestTimeoutSeconds,
                    maxLargeBodyBytesInFlight: config.uploadBudgetBytes,
                    maxLargeBodyBytesPerPeer: config.uploadBudgetPerAddressBytes, sharedPeers: config.trustedProxies,
                    minUploadBytesPerSecond: config.uploadMinBytesPerSecond,
                    uploadRateWindowSeconds: config.uploadRateWindowSeconds,
                    maxResponseBufferBytes: config.responseBufferBytes,
                    maxResponseBufferBytesPerPeer: config.responseBufferPerAddressBytes),
                logger: logger,
                onServerAnswer: { status in
                    metrics.recordRequest(route: "unmatched", method: "other", status: status, seconds: 0)
                },
                unknownMethod: { method, path in dispatcher.unrouted(method: method, rawPath: path) },
                authorizeUpload: { headers in await dispatcher.authorizeUpload(headers) },
                loop: (loopExecutor, loopWakeup),
                // Matched once, when the head arrives: the body limit comes from the route, and
                // the match goes with the request to the dispatcher.
                route: { method, path, headers in
                    let match = router.match(method: method, rawPath: path)
                    if case .found(let route, _) = match { return (route.maxBodyBytes?(headers), match) }
                    return (nil, match)
                },
                handler: { request in await dispatcher.handle(request) })
            server.drive([backends.auth.client, backends.profile.client, backends.notification.client])
            gauges.withLock { $0 = (hub, server, live) }
            let delivery = live.connect(
                context: runtime.context,
                // Every NotificationService replica's delivery socket: each publishes what it wrote.
                endpoints: RPCClient.split(
                    ServiceDescription.notification.endpoints(runtime.env).delivery ?? "tcp://127.0.0.1:5557"),
                security: runtime.security)
            let authEvents = LiveEventSubscriber(
                producer: .auth, endpoint: ServiceDescription.auth.endpoints(runtime.env).events, context: runtime.context,
                replay: backends.auth.client, logger: logger, security: runtime.security)
            authEvents.on(Auth.SessionRevoked.self) { events in sessions.revoke(events.flatMap(\.body.sessionIds)) }
            let headsCheck = ServiceClosure {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(config.streamCheckMs))
                    if !Task.isCancelled { await live.checkHeads() }
                }
            }
            let heartbeat = ServiceClosure {
                while !Task.isCancelled {
                    // A little under the interval, so the gap between comments never exceeds it.
                    try? await Task.sleep(for: .milliseconds(config.heartbeatSeconds * 1_000 - 250))
                    if !Task.isCancelled { hub.heartbeat() }
                }
            }
            let port = try server.start()
            logger.info("gateway.listening", metadata: ["host": config.host, "port": "\(port)"])
            let ready = ServiceClosure {
                // Ready once the auth subscriber knows where it starts (bounded), so a logout after
                // the ready line closes the session's streams.
                await authEvents.waitUntilStarted(timeoutMs: 3_000)
                runtime.announceReady(["port": "\(port)"])
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3_600)) }
            }
            try await ServiceGroup(
                services: [
                    ("delivery", delivery), ("subscriber.auth", authEvents), ("heartbeat", heartbeat),
                    ("streams.check", headsCheck), ("ready", ready), ("http", StreamClosingServer(server: server, hub: hub)),
                ], logger: logger
            ).run()
            runtime.context.shutdown()
            logger.info("service.stopped")
            return 0
        } catch {
            logger.error("service.failed", metadata: ["error": "\(error)"])
            return 1
        }
    }
}

/// The HTTP server as a service that closes the notification streams (and refuses new ones)
/// when it is asked to stop.
struct StreamClosingServer: Service {
    let server: HTTPServer
    let hub: StreamHub
    func run() async { await server.run() }
    func shutdownGracefully() {
        hub.closeAll()
        server.shutdownGracefully()
    }
}

/// Routes one request: the route, the caller's session on authenticated routes, the handler,
/// and problem details for every error; counts it in the metrics.
struct Dispatcher: Sendable {
    let router: Router
    let authenticator: Authenticator
    let clientAddress: ClientAddress
    let metrics: Metrics
    let logger: Logger

    /// The answer to a method the server cannot parse a request of: 405 with `Allow` when the
    /// path exists (RFC 9110 §15.5.6), else 404 or 400, as for any method a route lacks.
    func unrouted(method: String, rawPath: String) -> HTTPResponse {
        switch router.match(method: method, rawPath: rawPath) {
        case .methodNotAllowed(let allowed): return Self.methodNotAllowed(method, allowed).response
        case .malformed(let message): return Problem(status: 400, code: "invalid_path", detail: message).response
        case .notFound, .found:
            return Problem.notFound("no route for \(method) `\(String(rawPath).visibleForMessage(limit: 256))`").response
        }
    }

    /// `OPTIONS *`: the server's own options (RFC 9110 §9.3.7): 200 with `Allow` naming every
    /// method some route serves, and `Content-Length: 0` (no content).
    func serverOptions() -> HTTPResponse {
        var methods = Set(router.routes.map(\.method))
        if methods.contains("GET") { methods.insert("HEAD") }
        methods.insert("OPTIONS")
        return HTTPResponse(status: 200, headers: [("Allow", methods.sorted().joined(separator: ", "))], body: [])
    }

    static func methodNotAllowed(_ method: String, _ allowed: [String]) -> Problem {
        var p = Problem(
            status: 405, code: "method_not_allowed",
            detail: "\(method) is not allowed here; use \(allowed.joined(separator: ", "))")
        p.extraHeaders.append(("Allow", allowed.joined(separator: ", ")))
        return p
    }

    /// Checks an upload's bearer token (AuthService, through the token cache) before the
    /// server gives it any of the upload budget.
    /// - Returns: nil for a valid token, else the answer: 401 `unauthorized` / `invalid_token`,
    ///   or AuthService's 503/504.
    func authorizeUpload(_ headers: HTTPHeaders) async -> HTTPResponse? {
        let request = HTTPRequest(method: "POST", path: "", rawQuery: nil, headers: headers, body: [], peerAddress: "")
        do {
            _ = try await authenticator.authenticate(request)
            return nil
        } catch let problem as Problem {
            return problem.response
        } catch let error as ServiceError {
            return Problem(error).response
        } catch {
            return Problem.internalError().response
        }
    }

    /// Handles one request; never throws (errors become problem details).
    func handle(_ http: HTTPRequest) async -> HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        var label = "unmatched"
        var response: HTTPResponse
        switch (http.routed as? Router.Match) ?? router.match(method: http.method, rawPath: http.path) {
        case .malformed where http.method == "OPTIONS" && http.path == "*":
            response = serverOptions()
        case .malformed(let message):
            response = Problem(status: 400, code: "invalid_path", detail: message).response
        case .notFound:
            response = Problem.notFound("no route for \(http.method) `\(http.path.visibleForMessage(limit: 256))`").response
        case .methodNotAllowed(let allowed):
            response = Self.methodNotAllowed(http.method, allowed).response
        case .found(let route, let params):
            label = route.template
            let trace = RandomID.unique()
            do {
                let query = try Query(http.rawQuery)
                response = try await RequestTrace.$id.withValue(trace) {
                    let session = route.authenticated ? try await authenticator.authenticate(http) : nil
                    // 415 / 400 for any route given a body, except an upload's; a route that
                    // takes no body refuses every member, as others refuse unknown ones. The
                    // parsed body goes to the handler (`Request.body()`), not parsed again.
                    var parsed: JSONBody? = nil
                    if !http.body.isEmpty && !route.rawBody {
                        let body: JSONBody
                        do {
                            body = try JSONBody(http, requireContentType: route.takesJSON)
                        } catch var problem as Problem where problem.status == 415 {
                            // What would be taken (RFC 5789 §3.1 `Accept-Patch`; `Accept-Post` likewise).
                            if http.method == "PATCH" || http.method == "POST" {
                                problem.extraHeaders.append(
                                    ("Accept-\(http.method == "PATCH" ? "Patch" : "Post")", "application/json"))
                            }
                            throw problem
                        }
                        if !route.takesJSON { try body.allowOnly([]) }
                        parsed = body
                    }
                    return try await route.handler(
                        Request(
                            http: http, parameters: Parameters(values: params), query: query, session: session,
                            clientAddress: clientAddress.resolve(http), trace: trace, route: route.template, baseLogger: logger,
                            parsedBody: parsed))
                }
            } catch let problem as Problem {
                response = problem.response
            } catch let error as ServiceError {
                response = Problem(error).response
            } catch {
                logger.error("request.failed", metadata: ["error": "\(error)", "request.id": trace, "route": label])
                response = Problem.internalError().response
            }
            if route.streaming, case .bytes = response.body { response.headers.append(("Connection", "close")) }
        }
        metrics.recordRequest(
            route: label, method: http.method, status: response.status,
            seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        if response.status >= 500 {
            logger.warning("request.error", metadata: ["route": label, "status": "\(response.status)"])
        }
        return response
    }
}
