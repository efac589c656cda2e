/// Matches `METHOD /path` against path templates such as `/v1/users/{username}/followers`.
struct Router<Handler: Sendable>: Sendable {
    struct Route: Sendable {
        var method: String
        /// The template, e.g. `/v1/posts/{id}/like` (also the metrics label).
        var template: String
        var segments: [Segment]
        var handler: Handler
    }
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }
    enum Match {
        case found(Route, [String: String])
        /// The path exists with other methods.
        case methodNotAllowed([String])
        case notFound
    }

    private(set) var routes: [Route] = []

    /// Adds a route; `{name}` segments capture one path segment.
    mutating func add(_ method: String, _ template: String, _ handler: Handler) {
        let segments = Self.split(template).map { s -> Segment in
            s.hasPrefix("{") && s.hasSuffix("}")
                ? .parameter(String(s.dropFirst().dropLast())) : .literal(String(s))
        }
        routes.append(Route(method: method, template: template, segments: segments, handler: handler))
    }

    /// Finds the route for a request. Literal segments win over parameters when both match.
    func match(method: String, path: String) -> Match {
        let parts = Self.split(path)
        var best: (Route, [String: String], Int)?
        var allowed: [String] = []
        for route in routes where route.segments.count == parts.count {
            var params: [String: String] = [:]
            var literals = 0
            var ok = true
            for (segment, part) in zip(route.segments, parts) {
                switch segment {
                case .literal(let l):
                    if l != part { ok = false } else { literals += 1 }
                case .parameter(let name):
                    if part.isEmpty { ok = false } else { params[name] = String(part) }
                }
                if !ok { break }
            }
            guard ok else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                if best == nil || literals > best!.2 { best = (route, params, literals) }
            } else {
                allowed.append(route.method)
            }
        }
        if let best { return .found(best.0, best.1) }
        if !allowed.isEmpty { return .methodNotAllowed(Array(Set(allowed)).sorted()) }
        return .notFound
    }

    private static func split(_ path: String) -> [Substring] {
        var p = Substring(path)
        if p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        return p.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { $0 }
    }
}
