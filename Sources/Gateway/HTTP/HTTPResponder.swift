/// What an `HTTPServer` serves (Hummingbird's `HTTPResponder`): it routes each request once,
/// from its head, before any of its body is read (the route gives the body limit and the
/// handler), and answers what the server cannot hand to a route. The gateway's is `Dispatcher`;
/// the server's own tests use `HTTPServer(configuration:logger:handler:)`.
///
/// Every method is called on the loop thread (`authorizeUpload` runs there as a task), so none
/// may block.
protocol HTTPResponder: Sendable {
    /// The route of a request whose head has arrived (method, raw path without the query,
    /// headers with lower-case names): its body limit and the handler that answers it once the
    /// body is in. Called once per request.
    func route(_ method: HTTPMethod, path: String, headers: HTTPHeaders) -> HTTPRoute

    /// The answer to a well-formed request line whose method http-parser does not know (the
    /// method and the raw path), e.g. 405 with `Allow` when the path exists; nil: 501
    /// `method_not_implemented`.
    func unknownMethod(_ method: String, path: String) -> Problem?

    /// Checks an upload's credentials (its headers) before it takes any of the upload budget;
    /// nil lets it go on, a problem (401, or 503 when the check cannot be made) refuses it.
    /// Reading from the connection is paused meanwhile.
    func authorizeUpload(_ headers: HTTPHeaders) async -> Problem?

    /// Told the status of each answer the server wrote by itself (a refused or malformed
    /// request, a connection there was no room for), for metrics.
    func serverAnswered(status: Int)
}

extension HTTPResponder {
    func unknownMethod(_ method: String, path: String) -> Problem? { nil }
    func authorizeUpload(_ headers: HTTPHeaders) async -> Problem? { nil }
    func serverAnswered(status: Int) {}
}
