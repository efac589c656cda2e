/// Matches `METHOD /path` against templates such as `/v1/users/{username}/followers`, segment by
/// segment on the raw path (RFC 3986 §2.4: split first, then percent-decode each segment), so an
/// escaped `/` can never move a request to another route. A segment that decodes to `/` or NUL,
/// or holds an invalid escape, is refused (400) rather than matched.
struct Router: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    struct Route: Sendable {
        /// What a route's request body may be.
        enum Body: Sendable {
            /// None: a body is parsed as JSON only to refuse every member (400
            /// `unknown_field`); an empty body or `{}` is fine.
            case none
            /// A JSON object (`Request.decode`): it needs a JSON `Content-Type` (else 415),
            /// and is parsed before the handler runs.
            case json
            /// Raw bytes (an upload), not checked as JSON, of at most `maxBytes(headers)` bytes
            /// (e.g. by the declared `Content-Type`): a declared length over it is 413 before
            /// the body is read.
            case raw(maxBytes: @Sendable (HTTPHeaders) -> Int)

            /// Whether the body is a JSON object the handler reads.
            var isJSON: Bool {
                if case .json = self { return true }
                return false
            }
        }

        var method: HTTPMethod
        /// The template, e.g. `/v1/posts/{id}/like`: also the metrics label.
        var template: String
        var segments: [Segment]
        var authenticated: Bool
        var body: Body
        /// The route answers with an event stream: an error answer there ends the connection
        /// (an event-stream client reads until the connection closes).
        var streaming: Bool
        var handler: @Sendable (Request) async throws -> HTTPResponse

        /// Largest body this route takes given the request's headers, in bytes (nil: the
        /// server's default, 1 MiB).
        func maxBodyBytes(_ headers: HTTPHeaders) -> Int? {
            if case .raw(let maxBytes) = body { return maxBytes(headers) }
            return nil
        }
    }

    enum Match: Sendable {
        case found(Route, [String: String])
        /// The path exists with other methods (for `Allow`, RFC 9110 §15.5.6), in the order of
        /// their names.
        case methodNotAllowed([HTTPMethod])
        case notFound
        /// The path cannot be decoded; the message says why.
        case malformed(String)
    }

    let routes: [Route]

    init(_ routes: [Route]) { self.routes = routes }

    /// Splits a template into segments (`{name}` captures one segment).
    static func segments(_ template: String) -> [Segment] {
        template.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { s in
            s.hasPrefix("{") && s.hasSuffix("}") ? .parameter(String(s.dropFirst().dropLast())) : .literal(String(s))
        }
    }

    /// The raw path's segments, each percent-decoded, or why it cannot be. One trailing `/` is
    /// ignored.
    static func decodeSegments(_ rawPath: String) -> Result<[String], RouteError> {
        guard rawPath.utf8.first == UInt8(ascii: "/") else { return .failure(RouteError("the path must start with /")) }
        if !rawPath.utf8.contains(UInt8(ascii: "%")) {
            // Nothing to decode (the common case): split only.
            var segments = rawPath.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
            if segments.count > 1, segments.last?.isEmpty == true { segments = segments.dropLast() }
            return .success(segments.map { String(Substring($0)) })
        }
        var raw = Substring(rawPath)
        if raw.count > 1 && raw.hasSuffix("/") { raw = raw.dropLast() }
        var out: [String] = []
        for segment in raw.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            guard let decoded = PercentDecoding.decode(segment, plusIsSpace: false) else {
                return .failure(RouteError("a path segment holds an invalid percent-escape"))
            }
            if decoded.contains("/") || decoded.utf8.contains(0) {
                return .failure(RouteError("a path segment may not encode / or NUL"))
            }
            out.append(decoded)
        }
        return .success(out)
    }

    struct RouteError: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    /// Finds the route for a request. Literal segments win over parameters when both match;
    /// `HEAD` is served by the `GET` route (RFC 9110 §9.3.2).
    func match(method: HTTPMethod, rawPath: String) -> Match {
        let parts: [String]
        switch Self.decodeSegments(rawPath) {
        case .success(let p): parts = p
        case .failure(let e): return .malformed(e.message)
        }
        var best: (Route, [String: String], Int)?
        var allowed: Set<HTTPMethod> = []
        for route in routes where route.segments.count == parts.count {
            var params: [String: String] = [:]
            var literals = 0
            var ok = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let l):
                    if l == part { literals += 1 } else { ok = false }
                case .parameter(let name):
                    if part.isEmpty { ok = false } else { params[name] = part }
                }
                if !ok { break }
            }
            guard ok else { continue }
            if route.method == method || (method == .head && route.method == .get) {
                if best == nil || literals > best!.2 { best = (route, params, literals) }
            } else {
                allowed.insert(route.method)
                if route.method == .get { allowed.insert(.head) }
            }
        }
        if let best { return .found(best.0, best.1) }
        if !allowed.isEmpty { return .methodNotAllowed(allowed.sorted { $0.token < $1.token }) }
        return .notFound
    }
}
