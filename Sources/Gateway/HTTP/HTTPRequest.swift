/// One HTTP request, fully received.
struct HTTPRequest: Sendable {
    /// The method as sent (methods are case-sensitive, RFC 9110 §9.1).
    var method: HTTPMethod
    /// The path as sent, percent-escapes and all (routing splits it into segments first, then
    /// decodes each: RFC 3986 §2.4).
    var path: String
    /// The query string without `?` (nil when there is none), undecoded.
    var rawQuery: String?
    var headers: HTTPHeaders
    var body: [UInt8]
    /// The TCP peer's address (the client, or the proxy in front of it).
    var peerAddress: String

    /// A header's first value by lower-case name.
    func header(_ name: String) -> String? { headers[name] }
}
