import Shared

/// What a route handler gets: the request, its path parameters and, on authenticated routes,
/// the caller's session and token.
struct Call: Sendable {
    var request: HTTPRequest
    var params: [String: String]
    var session: Auth.Validate.Reply?
    var token: String?

    /// The caller's user id (authenticated routes only).
    var userId: String { session?.userId ?? "" }

    /// A path parameter (always present on a matched route).
    func param(_ name: String) -> String { params[name] ?? "" }

    /// The parsed JSON body.
    /// - Throws: `Problem` 415 / 400 `malformed_json`.
    func body() throws -> JSONBody { try JSONBody(request) }

    /// `?limit=N&cursor=C`: limit 1...100 (default 20).
    /// - Throws: `Problem` 400 `invalid_field` naming `limit`.
    func page() throws -> PageRequest {
        var limit = 20
        if let raw = request.query["limit"] {
            guard !raw.isEmpty, raw.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(raw),
                (1...100).contains(n)
            else {
                throw Problem.invalidField("limit", "must be an integer in 1...100")
            }
            limit = n
        }
        let cursor = request.query["cursor"].flatMap { $0.isEmpty ? nil : $0 }
        return PageRequest(limit: limit, cursor: cursor)
    }
}

/// A route handler.
typealias RouteHandler = @Sendable (Call) async throws -> HTTPResponse

/// A route's handler and whether it needs a bearer token.
struct RouteEntry: Sendable {
    var authenticated: Bool
    var handler: RouteHandler
}
