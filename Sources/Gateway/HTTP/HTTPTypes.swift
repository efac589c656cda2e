/// Header fields as received: names lower-cased, in order, repeats kept.
struct HTTPHeaders: Sendable {
    var fields: [(name: String, value: String)] = []

    /// The first value of `name` (lower-case), or nil.
    subscript(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of `name` (lower-case).
    func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
}

/// One HTTP request, fully received.
struct HTTPRequest: Sendable {
    /// The method token as sent (methods are case-sensitive, RFC 9110 §9.1).
    var method: String
    /// The path as sent, percent-escapes and all (routing splits it into segments first, then
    /// decodes each: RFC 3986 §2.4).
    var path: String
    /// The query string without `?` (nil when there is none), undecoded.
    var rawQuery: String?
    var headers: HTTPHeaders
    var body: [UInt8]
    /// The TCP peer's address (the client, or the proxy in front of it).
    var peerAddress: String
    /// What the server's route lookup found for this request's head (`HTTPServer.route`; the
    /// gateway's `Router.Match`), so the handler does not match it again; nil when none ran.
    var routed: (any Sendable)? = nil

    /// A header's first value by lower-case name.
    func header(_ name: String) -> String? { headers[name] }
}

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

/// A response body of known length produced chunk by chunk (e.g. a large file read from a
/// service in pieces): the server asks for the next chunk only once the previous one is written,
/// so a connection holds one chunk at a time, however large the body. Sent with
/// `Content-Length: length`; a chunk that is missing (nil, an error) or would overrun the length
/// ends the connection, which the client sees as a short body.
struct BodySource: Sendable {
    /// The body's length in bytes.
    var length: Int
    /// The largest chunk `next` returns, in bytes: what the server holds of its response budget
    /// before asking for one (a larger chunk is counted as it is).
    var chunkLimit = 1 << 20
    /// The next chunk (non-empty).
    var next: @Sendable () async throws -> [UInt8]?
}

/// Reason phrases (RFC 9110 §15), used in status lines and as problem titles.
enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 206: "Partial Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}

extension Substring {
    /// The text without leading and trailing optional whitespace: space and horizontal tab, the
    /// `OWS` of RFC 9110 §5.6.3 (Foundation's `trimmingCharacters(in: .whitespaces)` went through
    /// `NSString` and was 4 % of the gateway's CPU per authenticated request).
    func trimmingOptionalWhitespace() -> String {
        let isText = { (b: UInt8) in b != 0x20 && b != 0x09 }
        guard let first = utf8.firstIndex(where: isText), let last = utf8.lastIndex(where: isText) else { return "" }
        return String(Substring(utf8[first...last]))
    }
}

extension String {
    /// The text without leading and trailing optional whitespace (`Substring`'s).
    func trimmingOptionalWhitespace() -> String { self[...].trimmingOptionalWhitespace() }

    /// The text as a message can show it between backticks: visible characters as they are
    /// (Korean, accented letters, emoji), and as Swift's escapes (`\u{00A0}`, `\t`) every
    /// character that shows nothing or could be mistaken for another — controls, format
    /// characters, separators other than the space, private-use and unassigned code points — and
    /// the backslash and backtick that would make the quoting ambiguous; cut after `limit`
    /// scalars with `…`. So an invisible or oversized value a client sent is still readable in an
    /// error.
    func visibleForMessage(limit: Int = 64) -> String {
        var out = ""
        for (n, scalar) in unicodeScalars.enumerated() {
            if n == limit {
                out += "…"
                break
            }
            // Swift's escape leaves a backtick as it is: written as its code point instead.
            out +=
                Self.isPlainlyVisible(scalar)
                ? String(scalar) : scalar == "`" ? "\\u{60}" : scalar.escaped(asASCII: true)
        }
        return out
    }

    /// A client's member name as `errors[].field` carries it: as sent, or, past `limit` scalars,
    /// its first `limit` and `…` (a name that long is no field of ours, and echoing it whole
    /// would answer a 1 MB body with half a megabyte).
    func cutForField(limit: Int = 64) -> String {
        unicodeScalars.count > limit ? String(String.UnicodeScalarView(unicodeScalars.prefix(limit))) + "…" : self
    }

    private static func isPlainlyVisible(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return (0x20..<0x7f).contains(scalar.value) && scalar != "\\" && scalar != "`" }
        switch scalar.properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate,
            .unassigned, .nonspacingMark, .enclosingMark:
            return false
        default:
            return true
        }
    }
}
