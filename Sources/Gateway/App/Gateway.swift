import Foundation
import Shared
import Synchronization

/// The HTTP API of ../shared/API.md in front of AuthService, ProfileService and
/// NotificationService: routing, bearer-token checks with a short cache, fan-out to the
/// services, problem details for every error, and the live notification stream.
final class Gateway: Sendable {
    let config: GatewayConfig
    let logger: Logger
    let auth: Backend
    let profile: Backend
    let graph: Backend
    let tokens: TokenCache
    let hub: StreamHub
    let metrics: Metrics
    /// Subscribers that have read their producer's head.
    let subscribersStarted = Mutex(0)
    /// Public users seen in recent batch replies, by id: the fallback for live stream events
    /// while ProfileService is unreachable (bounded: cleared past 50,000 entries).
    let recentUsers = Mutex<[String: PublicUser]>([:])
    private(set) nonisolated(unsafe) var router = Router<RouteEntry>()
    // nonisolated(unsafe): built once in init (registerRoutes) before the gateway is shared; read-only after.

    init(config: GatewayConfig, runtime: ServiceRuntime) throws {
        self.config = config
        self.logger = runtime.logger
        let hub = StreamHub()
        let metrics = Metrics(openStreams: { hub.count })
        hub.setMetrics(metrics)
        self.hub = hub
        self.metrics = metrics
        self.tokens = TokenCache(ttlMs: Int64(config.tokenCacheSeconds) * 1000)
        let env = runtime.env
        auth = Backend(
            client: try runtime.client("auth", ServiceEndpoints.auth(env)), metrics: metrics,
            timeoutMs: config.rpcTimeoutMs)
        profile = Backend(
            client: try runtime.client("profile", ServiceEndpoints.profile(env)), metrics: metrics,
            timeoutMs: config.rpcTimeoutMs)
        graph = Backend(
            client: try runtime.client("notification", ServiceEndpoints.notification(env)),
            metrics: metrics,
            timeoutMs: config.rpcTimeoutMs)
        var router = Router<RouteEntry>()
        for (method, template, authenticated, handler) in routeTable() {
            router.add(method, template, RouteEntry(authenticated: authenticated, handler: handler))
        }
        self.router = router
    }

    /// `METHOD /path` lines for `--print-routes`.
    var routeLines: [String] { router.routes.map { "\($0.method) \($0.template)" } }

    // MARK: Dispatch

    /// Handles one request; never throws (errors become problem details).
    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        var label = "unmatched"
        var response: HTTPResponse
        switch router.match(method: request.method, path: request.path) {
        case .notFound:
            response = Problem.notFound("no route for \(request.method) \(request.path)").response
        case .methodNotAllowed(let allowed):
            response = Problem.methodNotAllowed(request.method, allowed: allowed).response
            response.headers.append(("Allow", allowed.joined(separator: ", ")))
        case .found(let route, let params):
            label = route.template
            do {
                var call = Call(request: request, params: params, session: nil, token: nil)
                if route.handler.authenticated {
                    let (token, session) = try await authenticate(request)
                    call.token = token
                    call.session = session
                }
                if !request.body.isEmpty {
                    _ = try JSONBody(request)  // 415 / 400 malformed_json for any route given a body
                }
                response = try await route.handler.handler(call)
            } catch let problem as Problem {
                response = problem.response
            } catch let error as ServiceError {
                response = Problem(error).response
            } catch {
                logger.error("request.failed", metadata: ["route": label, "error": "\(error)"])
                response = Problem.internalError().response
            }
        }
        if request.method == "HEAD", case .bytes = response.body { response.body = .bytes([]) }
        if label == "/v1/notifications/stream", case .bytes = response.body {
            // A refused stream ends its connection (event-stream clients read until close).
            response.headers.append(("Connection", "close"))
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        metrics.recordRequest(
            route: label, method: request.method, status: response.status, seconds: seconds)
        if response.status >= 500 {
            logger.warning(
                "request.error",
                metadata: ["route": label, "method": request.method, "status": "\(response.status)"])
        }
        return response
    }

    /// Checks `Authorization: Bearer <token>` (cached for a short time).
    /// - Throws: `Problem` 401, or the auth service's 503/504.
    func authenticate(_ request: HTTPRequest) async throws -> (String, Auth.Validate.Reply) {
        guard let header = request.header("authorization") else {
            throw Problem.unauthorized("an Authorization: Bearer token is required").withAuthenticate()
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw Problem.unauthorized("the Authorization header must be `Bearer <token>`")
                .withAuthenticate()
        }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        guard !token.isEmpty, token.count <= 512 else {
            throw Problem(status: 401, code: "invalid_token", detail: "the token is not valid")
                .withAuthenticate()
        }
        if let session = tokens.get(token) { return (token, session) }
        do {
            let session = try await auth.call(Auth.Validate.self, .init(token: token))
            tokens.put(token, session)
            return (token, session)
        } catch let error as ServiceError where error.status == 401 || error.status == 404 {
            throw Problem(
                status: 401, code: "invalid_token", detail: "the token is unknown, expired or logged out"
            ).withAuthenticate()
        }
    }

    /// Drops cached tokens and closes the streams of revoked sessions.
    func sessionsRevoked(_ sessionIds: [String]) {
        tokens.revoke(sessionIds: sessionIds)
        hub.close(sessionIds: sessionIds)
    }
}

extension Problem {
    /// Adds `WWW-Authenticate: Bearer` to a 401 (RFC 6750 §3).
    func withAuthenticate() -> Problem {
        var p = self
        p.extraHeaders.append(("WWW-Authenticate", "Bearer"))
        return p
    }
}
