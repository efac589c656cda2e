/// One HTTP request as the gateway's handlers see it, fully received.
struct HTTPRequest: Sendable {
    /// Upper-case method, e.g. `GET`.
    var method: String
    /// The decoded path without the query string, e.g. `/v1/users/alice`.
    var path: String
    /// Query arguments (last one wins for a repeated name).
    var query: [String: String]
    /// Header fields with lower-case names.
    var headers: [String: String]
    /// The body bytes (at most the server's body limit).
    var body: [UInt8]

    /// A header by case-insensitive name.
    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A reply: either a complete body, or a Server-Sent Events stream fed by an `EventStream`.
struct HTTPResponse: Sendable {
    enum Body: Sendable {
        case bytes([UInt8])
        case stream(EventStream)
    }
    var status: Int
    var headers: [(String, String)]
    var body: Body

    init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = .bytes(body)
    }

    init(stream: EventStream) {
        self.status = 200
        self.headers = [
            ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
            ("X-Accel-Buffering", "no"), ("Connection", "close"),
        ]
        self.body = .stream(stream)
    }

    /// A JSON body (`Content-Type: application/json`).
    static func json(_ status: Int, _ bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: bytes)
    }
}
