/// The routes of one area, registered the way Hummingbird's `RouteCollection` does.
struct RouteCollection {
    private(set) var routes: [Router.Route] = []

    /// Adds a route. `authenticated` routes get the caller's session in `Request.session`;
    /// `body` says what request body the route takes (`Router.Route.Body`: none, a JSON object
    /// read with `Request.decode`, or raw bytes); `streaming` routes answer with an event stream.
    mutating func add(
        _ method: HTTPMethod, _ template: String, authenticated: Bool = true, body: Router.Route.Body = .none,
        streaming: Bool = false, _ handler: @escaping @Sendable (Request) async throws -> HTTPResponse
    ) {
        routes.append(
            Router.Route(
                method: method, template: template, segments: Router.segments(template), authenticated: authenticated,
                body: body, streaming: streaming, handler: handler))
    }
}
