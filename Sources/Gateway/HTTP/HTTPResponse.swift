/// A reply: a complete body, a body produced chunk by chunk (`BodySource`), or a Server-Sent
/// Events stream fed by an `EventStream`.
struct HTTPResponse: Sendable {
    enum Body: Sendable {
        case bytes([UInt8])
        case source(BodySource)
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

    /// A `text/event-stream` response read from `stream` until it closes.
    init(stream: EventStream) {
        self.status = 200
        self.headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")]
        self.body = .stream(stream)
    }

    /// A JSON body (`Content-Type: application/json`).
    static func json(status: Int, bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: bytes)
    }
}
