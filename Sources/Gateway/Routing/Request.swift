import Shared

/// What a route handler gets: the HTTP request, its path parameters and query, and on
/// authenticated routes the caller's session.
struct Request: Sendable {
    var http: HTTPRequest
    var parameters: Parameters
    var query: Query
    /// The caller's session (authenticated routes only).
    var session: Session?
    /// The client's address (`X-Forwarded-For` believed only from a trusted proxy).
    var clientAddress: String
    /// The request's id, also the trace id of every service call made for it.
    var trace: String
    /// The route's template (`/v1/users/{username}`).
    var route: String
    /// The gateway's logger, without this request's metadata.
    let baseLogger: Logger
    /// The body as the dispatcher parsed it to check it (nil: not parsed), so it is parsed once.
    var parsedBody: JSONBody? = nil

    /// The gateway's logger with this request's id (`request.id`, also the trace of its
    /// service calls) and route (built when asked for: most requests log nothing).
    var logger: Logger { baseLogger.with(["request.id": trace, "route": route]) }

    /// The caller's user id. - Throws: 401 when the route is not authenticated (a programming error).
    var userId: String {
        get throws {
            guard let session else { throw Problem.unauthorized("unauthorized", "authentication is required") }
            return session.userId
        }
    }

    /// The JSON body (parsed once: the dispatcher's parse when it made one).
    /// - Throws: `Problem` 415 / 400 `malformed_json`.
    func body() throws -> JSONBody { try parsedBody ?? JSONBody(http) }

    /// `?limit=N&cursor=C`: limit 1...100 (default 20), cursor opaque.
    /// - Throws: `Problem` 400 `invalid_field` naming `limit` or `cursor`.
    func page() throws -> PageRequest {
        var limit = 20
        if let raw = query["limit"] {
            guard !raw.isEmpty, raw.utf8.count <= 3, raw.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let n = Int(raw),
                (1...100).contains(n)
            else { throw Problem.invalidField("limit", "must be an integer from 1 to 100") }
            limit = n
        }
        let cursor = query["cursor"].flatMap { $0.isEmpty ? nil : $0 }
        if let cursor, cursor.utf8.count > 512 {
            throw Problem.invalidField("cursor", "is not one this list gave out", code: "invalid_cursor")
        }
        return PageRequest(limit: limit, cursor: cursor)
    }
}

/// A bearer token's session.
struct Session: Sendable {
    var token: String
    var userId: String
    var sessionId: String
    var username: String
}

/// A route's path parameters, percent-decoded; each read throws when missing (Hummingbird's
/// `require`), so a template and its handler cannot drift apart silently.
struct Parameters: Sendable {
    var values: [String: String]

    /// - Throws: 500 when the route has no such parameter (a programming error).
    func require(_ name: String) throws -> String {
        guard let value = values[name] else { throw Problem.internalError() }
        return value
    }
}

/// The query string's parameters, percent-decoded (`+` is a space); the last of a repeated
/// name wins.
struct Query: Sendable {
    var values: [String: String] = [:]

    /// - Throws: `Problem` 400 `invalid_query` for an invalid escape.
    init(_ raw: String?) throws {
        guard let raw, !raw.isEmpty else { return }
        for pair in raw.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentDecoding.decode(parts[0], plusIsSpace: true),
                let value = PercentDecoding.decode(parts.count > 1 ? parts[1] : "", plusIsSpace: true)
            else {
                throw Problem(status: 400, code: "invalid_query", detail: "the query string holds an invalid percent-escape")
            }
            values[name] = value
        }
    }

    subscript(_ name: String) -> String? { values[name] }
}

/// The routes of one area, registered the way Hummingbird's `RouteCollection` does.
struct RouteCollection {
    private(set) var routes: [Router.Route] = []

    /// Adds a route. `authenticated` routes get the caller's session in `Request.session`;
    /// `json` routes take a JSON object body (`Request.body()`), the others none (see
    /// `Router.Route.takesJSON`).
    mutating func add(
        _ method: String, _ template: String, authenticated: Bool = true, json: Bool = false, maxBodyBytes: Int? = nil,
        streaming: Bool = false, _ handler: @escaping @Sendable (Request) async throws -> HTTPResponse
    ) {
        var limit: (@Sendable (HTTPHeaders) -> Int)? = nil
        if let maxBodyBytes { limit = { _ in maxBodyBytes } }
        routes.append(
            Router.Route(
                method: method, template: template, segments: Router.segments(template), authenticated: authenticated,
                maxBodyBytes: limit, rawBody: false, takesJSON: json, streaming: streaming, handler: handler))
    }

    /// Adds a route whose body is raw bytes (an upload) of at most `maxBodyBytes(headers)` bytes,
    /// refused with 413 from `Content-Length` before the body is read.
    mutating func addRaw(
        _ method: String, _ template: String, maxBodyBytes: @escaping @Sendable (HTTPHeaders) -> Int,
        _ handler: @escaping @Sendable (Request) async throws -> HTTPResponse
    ) {
        routes.append(
            Router.Route(
                method: method, template: template, segments: Router.segments(template), authenticated: true,
                maxBodyBytes: maxBodyBytes, rawBody: true, takesJSON: false, streaming: false, handler: handler))
    }
}

/// One area of the API: registers its routes.
protocol Controller: Sendable {
    func register(_ routes: inout RouteCollection)
}

extension HTTPResponse {
    /// A JSON reply of an `Encodable` API shape (explicit nulls; see `JSONWriter`), its media links
    /// written as `PublicLinks` says.
    /// - Throws: `EncodingError` for a non-finite number (a programming error).
    static func json<T: Encodable>(_ status: Int, _ value: T) throws -> HTTPResponse {
        .json(status: status, bytes: PublicLinks.current.absolutized(try JSONWriter.encode(value)))
    }

    /// A 200 JSON reply of an `Encodable` API shape.
    static func json<T: Encodable>(_ value: T) throws -> HTTPResponse { try .json(200, value) }
}
