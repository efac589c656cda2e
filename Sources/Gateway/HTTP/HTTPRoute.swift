/// Where a request goes, decided once from its head (`HTTPResponder.route`).
struct HTTPRoute: Sendable {
    /// Largest body the request may have, in bytes (nil: the server's `maxBodyBytes`); a
    /// declared length over it is refused with 413 before the body is read.
    var maxBodyBytes: Int?
    /// Answers the request once its body is in; never throws (errors are answers).
    var respond: @Sendable (HTTPRequest) async -> HTTPResponse
}
