/// A responder that hands every request to one handler with the server's default body limit:
/// a server that needs no routing (the server's own tests).
struct HandlerResponder: HTTPResponder {
    let handler: @Sendable (HTTPRequest) async -> HTTPResponse

    func route(_ method: HTTPMethod, path: String, headers: HTTPHeaders) -> HTTPRoute {
        HTTPRoute(maxBodyBytes: nil, respond: handler)
    }
}
