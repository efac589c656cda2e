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
        var method: String
        /// The template, e.g. `/v1/posts/{id}/like`: also the metrics label.
        var template: String
        var segments: [Segment]
        var authenticated: Bool
        /// Largest body this route takes, in bytes (nil: the server's default, 1 MiB), given the
        /// request's headers (e.g. by its declared `Content-Type`).
        var maxBodyBytes: (@Sendable (HTTPHeaders) -> Int)?
        /// The body is raw bytes (an upload), not JSON: not checked as JSON before the handler.
        var rawBody: Bool
        /// The route takes a JSON object body (`Request.body()`): one needs a JSON
        /// `Content-Type` (else 415). A route that takes none refuses any member (400
        /// `unknown_field`); an empty body or `{}` is fine there.
        var takesJSON: Bool
        /// The route answers with an event stream: an error answer there ends the connection
        /// (an event-stream client reads until the connection closes).
        var streaming: Bool
        var handler: @Sendable (Request) async throws -> HTTPResponse
    }

    enum Match: Sendable {
        case found(Route, [String: String])
        /// The path exists with other methods (for `Allow`, RFC 9110 §15.5.6).
        case methodNotAllowed([String])
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
    func match(method: String, rawPath: String) -> Match {
        let parts: [String]
        switch Self.decodeSegments(rawPath) {
        case .success(let p): parts = p
        case .failure(let e): return .malformed(e.message)
        }
        var best: (Route, [String: String], Int)?
        var allowed: Set<String> = []
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
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                if best == nil || literals > best!.2 { best = (route, params, literals) }
            } else {
                allowed.insert(route.method)
                if route.method == "GET" { allowed.insert("HEAD") }
            }
        }
        if let best { return .found(best.0, best.1) }
        if !allowed.isEmpty { return .methodNotAllowed(allowed.sorted()) }
        return .notFound
    }

    /// The body limit of the route a request goes to, given its headers (nil: the default).
    func maxBodyBytes(method: String, rawPath: String, headers: HTTPHeaders) -> Int? {
        if case .found(let route, _) = match(method: method, rawPath: rawPath) { return route.maxBodyBytes?(headers) }
        return nil
    }
}

/// Percent-decoding (RFC 3986 §2.1) that refuses invalid escapes and invalid UTF-8.
enum PercentDecoding {
    /// The decoded text, or nil when an escape is not `%` and two hex digits or the result is
    /// not UTF-8. With `plusIsSpace` (query strings, `application/x-www-form-urlencoded`) `+`
    /// means a space.
    static func decode(_ text: Substring, plusIsSpace: Bool) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) || (plusIsSpace && bytes.contains(UInt8(ascii: "+"))) else {
            return String(text)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: b - 0x30
            case 0x41...0x46: b - 0x41 + 10
            case 0x61...0x66: b - 0x61 + 10
            default: nil
            }
        }
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, let h = hex(bytes[i + 1]), let l = hex(bytes[i + 2]) else { return nil }
                out.append(h << 4 | l)
                i += 3
            } else {
                out.append(plusIsSpace && b == UInt8(ascii: "+") ? 0x20 : b)
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
