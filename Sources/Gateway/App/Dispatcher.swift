import Foundation
import Support
import Wire

/// The HTTP server's responder: routes each request once, from its head (the route gives the
/// body limit), then checks the caller's session on authenticated routes and the body against
/// the route, runs the handler, and turns every error into problem details; counts each request
/// in the metrics.
final class Dispatcher: HTTPResponder {
    let router: Router
    let authenticator: Authenticator
    let clientAddress: ClientAddress
    let metrics: Metrics
    let logger: Logger

    init(router: Router, authenticator: Authenticator, clientAddress: ClientAddress, metrics: Metrics, logger: Logger) {
        self.router = router
        self.authenticator = authenticator
        self.clientAddress = clientAddress
        self.metrics = metrics
        self.logger = logger
    }

    func route(_ method: HTTPMethod, path: String, headers: HTTPHeaders) -> HTTPRoute {
        let match = router.match(method: method, rawPath: path)
        if case .found(let route, let parameters) = match {
            return HTTPRoute(maxBodyBytes: route.maxBodyBytes(headers)) { [self] http in
                await handle(http, route: route, parameters: parameters)
            }
        }
        return HTTPRoute(maxBodyBytes: nil) { [self] http in answer(http, unrouted: match) }
    }

    /// The answer to a method the server cannot parse a request of: 405 with `Allow` when the
    /// path exists (RFC 9110 §15.5.6), else 404 or 400, as for any method a route lacks.
    func unknownMethod(_ method: String, path: String) -> Problem? {
        let method = HTTPMethod(method)
        switch router.match(method: method, rawPath: path) {
        case .methodNotAllowed(let allowed): return Self.methodNotAllowed(method, allowed)
        case .malformed(let message): return Problem(status: 400, code: .invalidPath, detail: message)
        case .notFound, .found: return Problem.notFound("no route for \(method) `\(path.visibleForMessage(limit: 256))`")
        }
    }

    /// Checks an upload's bearer token (AuthService, through the token cache) before the
    /// server gives it any of the upload budget.
    /// - Returns: nil for a valid token, else the answer: 401 `unauthorized` / `invalid_token`,
    ///   or AuthService's 503/504.
    func authorizeUpload(_ headers: HTTPHeaders) async -> Problem? {
        do {
            _ = try await authenticator.authenticate(headers)
            return nil
        } catch let problem as Problem {
            return problem
        } catch let error as ServiceError {
            return Problem(error)
        } catch {
            return Problem.internalError()
        }
    }

    func serverAnswered(status: Int) { metrics.recordServerAnswer(status: status) }

    /// `OPTIONS *`: the server's own options (RFC 9110 §9.3.7): 200 with `Allow` naming every
    /// method some route serves, and `Content-Length: 0` (no content).
    func serverOptions() -> HTTPResponse {
        var methods = Set(router.routes.map(\.method))
        if methods.contains(.get) { methods.insert(.head) }
        methods.insert(.options)
        let allow = methods.map(\.token).sorted().joined(separator: ", ")
        return HTTPResponse(status: 200, headers: [("Allow", allow)], body: [])
    }

    /// 405 naming the methods the path has, in `Allow` too.
    static func methodNotAllowed(_ method: HTTPMethod, _ allowed: [HTTPMethod]) -> Problem {
        let names = allowed.map(\.token).joined(separator: ", ")
        var p = Problem(status: 405, code: .methodNotAllowed, detail: "\(method) is not allowed here; use \(names)")
        p.extraHeaders.append(("Allow", names))
        return p
    }

    /// Answers a request no route takes: `OPTIONS *`, 400 `invalid_path`, 404, or 405 with
    /// `Allow`.
    private func answer(_ http: HTTPRequest, unrouted match: Router.Match) -> HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        let response: HTTPResponse
        switch match {
        case .malformed where http.method == .options && http.path == "*":
            response = serverOptions()
        case .malformed(let message):
            response = Problem(status: 400, code: .invalidPath, detail: message).response
        case .methodNotAllowed(let allowed):
            response = Self.methodNotAllowed(http.method, allowed).response
        case .notFound, .found:
            response = Problem.notFound("no route for \(http.method) `\(http.path.visibleForMessage(limit: 256))`").response
        }
        return counted(response, route: "unmatched", method: http.method, since: start)
    }

    /// Handles a routed request; never throws (errors become problem details).
    private func handle(_ http: HTTPRequest, route: Router.Route, parameters: [String: String]) async -> HTTPResponse {
        let start = DispatchTime.now().uptimeNanoseconds
        let trace = RandomID.unique()
        var response: HTTPResponse
        do {
            let query = try Query(http.rawQuery)
            response = try await RequestTrace.$id.withValue(trace) {
                let session = route.authenticated ? try await authenticator.authenticate(http.headers) : nil
                return try await route.handler(
                    Request(
                        http: http, parameters: Parameters(values: parameters), query: query, session: session,
                        clientAddress: clientAddress.resolve(http), trace: trace, route: route.template, baseLogger: logger,
                        parsedBody: try checkBody(http, route.body)))
            }
        } catch let problem as Problem {
            response = problem.response
        } catch let error as ServiceError {
            response = Problem(error).response
        } catch {
            logger.error("request.failed", metadata: ["error": "\(error)", "request.id": trace, "route": route.template])
            response = Problem.internalError().response
        }
        if route.streaming, case .bytes = response.body { response.headers.append(("Connection", "close")) }
        return counted(response, route: route.template, method: http.method, since: start)
    }

    /// Checks a body against its route before the handler runs: 415 / 400 for any route given
    /// a body, except an upload's; a route that takes no body refuses every member, as others
    /// refuse unknown ones.
    /// - Returns: the parsed body, for the handler (`Request.decode`: parsed once); nil for none.
    /// - Throws: `Problem` 415 (with `Accept-Post` / `Accept-Patch`, RFC 5789 §3.1, for a POST or
    ///   PATCH), 400 `malformed_json`, 400 `unknown_field`.
    private func checkBody(_ http: HTTPRequest, _ body: Router.Route.Body) throws -> JSONBody? {
        if http.body.isEmpty { return nil }
        let parsed: JSONBody
        switch body {
        case .raw: return nil
        case .json, .none:
            do {
                parsed = try JSONBody(http, requireContentType: body.isJSON)
            } catch var problem as Problem where problem.status == 415 {
                // What would be taken (RFC 5789 §3.1 `Accept-Patch`; `Accept-Post` likewise).
                if http.method == .patch || http.method == .post {
                    problem.extraHeaders.append(("Accept-\(http.method == .patch ? "Patch" : "Post")", "application/json"))
                }
                throw problem
            }
        }
        if !body.isJSON { _ = try parsed.decode(NoBody.self) }
        return parsed
    }

    /// Counts an answer in the metrics (and logs a 5xx).
    private func counted(_ response: HTTPResponse, route: String, method: HTTPMethod, since start: UInt64) -> HTTPResponse {
        metrics.recordRequest(
            route: route, method: method, status: response.status,
            seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        if response.status >= 500 {
            logger.warning("request.error", metadata: ["route": route, "status": "\(response.status)"])
        }
        return response
    }
}
