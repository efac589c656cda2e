@testable import Gateway

/// A responder for the HTTP server's own tests: every request goes to `handler`, with the body
/// limit `maxBodyBytes` gives its path (nil: the server's default).
struct TestResponder: HTTPResponder {
    var maxBodyBytes: @Sendable (_ path: String) -> Int? = { _ in nil }
    var handler: @Sendable (HTTPRequest) async -> HTTPResponse

    func route(_ method: HTTPMethod, path: String, headers: HTTPHeaders) -> HTTPRoute {
        HTTPRoute(maxBodyBytes: maxBodyBytes(path), respond: handler)
    }
}
