import Messages
import Support
import Wire

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
    /// The body as the dispatcher parsed it to check it (nil: not parsed, e.g. empty), so it
    /// is parsed once.
    var parsedBody: JSONBody? = nil

    /// The gateway's logger with this request's id (`request.id`, also the trace of its
    /// service calls) and route (built when asked for: most requests log nothing).
    var logger: Logger { baseLogger.with(["request.id": trace, "route": route]) }

    /// The caller's user id. - Throws: 401 when the route is not authenticated (a programming error).
    var userId: String {
        get throws {
            guard let session else { throw Problem.unauthorized(.unauthorized, "authentication is required") }
            return session.userId
        }
    }

    /// The JSON body decoded as `T` by the strict request-body decoder (`RequestBodyDecoder`):
    /// a member `T` does not name is refused, and every error names its member. The body is
    /// parsed once (the dispatcher's parse when it made one; an empty body is `{}`).
    /// - Throws: `Problem` 415 / 400 `malformed_json`, 400 `unknown_field`, 400
    ///   `invalid_field` (`required` for a missing member), or what `T` throws.
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try (parsedBody ?? JSONBody(http)).decode(type) }

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
            throw Problem.invalidField("cursor", "is not one this list gave out", code: .invalidCursor)
        }
        return PageRequest(limit: limit, cursor: cursor)
    }
}
