// AdmissionPolicy: which request bodies the HTTP server lets in, decided from a request's head
// before any of its body is read, and how fast an admitted upload must keep arriving. The parser
// callbacks consult it once a request's headers are in; the loop's deadline checks, for the upload rate.

/// The HTTP server's admission policy for request bodies:
///
/// - a body whose declared length (`Content-Length`) is over its route's limit is refused (413);
/// - an upload (a route allowing more than `maxBodyBytes`) must carry `Authorization: Bearer`
///   credentials, else 401: every upload route needs them, and a request without any must not
///   take a share of the upload budget;
/// - an upload with credentials is checked (`HTTPResponder.authorizeUpload`, off the loop) and only
///   then reserves its declared length (or its limit, when chunked) of the `UploadBudget`, so
///   made-up tokens never hold the budget; no room is 503 `server_busy` with `Retry-After`;
/// - an admitted upload must bring at least `minUploadBytesPerSecond` over each rate window, else
///   408 and its share is given back, so a trickle cannot keep the budget.
///
/// A value with no state: the same head always gets the same decision.
struct AdmissionPolicy: Sendable, Equatable {
    /// The default body limit, in bytes (`HTTPServer.Configuration.maxBodyBytes`); a request
    /// whose route allows more is an upload.
    var maxBodyBytes: Int
    /// The least an upload must bring, in bytes per second over each window (0: no minimum).
    var minUploadBytesPerSecond: Int
    /// The window the upload rate is measured over, in milliseconds.
    var uploadRateWindowMs: Int64

    init(maxBodyBytes: Int, minUploadBytesPerSecond: Int = 0, uploadRateWindowMs: Int64 = 30_000) {
        self.maxBodyBytes = maxBodyBytes
        self.minUploadBytesPerSecond = minUploadBytesPerSecond
        self.uploadRateWindowMs = uploadRateWindowMs
    }

    /// The policy of a server configured so.
    init(_ configuration: HTTPServer.Configuration) {
        self.init(
            maxBodyBytes: configuration.maxBodyBytes, minUploadBytesPerSecond: configuration.minUploadBytesPerSecond,
            uploadRateWindowMs: Int64(configuration.uploadRateWindowSeconds) * 1000)
    }

    /// What to do with a request's body, decided from its head.
    enum Decision: Equatable {
        /// Read it (no further than its limit).
        case admit
        /// An upload with bearer credentials: pause reading, check them, then reserve this many
        /// bytes of the upload budget before reading its body.
        case authorizeUpload(reserving: Int)
        /// Answer now, without reading the body, and close the connection.
        case refuse(Refusal)
    }

    /// Why a body is not let in; `answer` is what the server writes.
    enum Refusal: Equatable {
        /// 413: the declared length is over the route's limit (in bytes).
        case tooLarge(limit: Int)
        /// 401: an upload without `Authorization: Bearer` credentials.
        case bearerTokenRequired
        /// 503: the upload budget (in all, or the peer's share) has no room for the upload.
        case uploadBudgetFull
        /// 408: an upload slower than the minimum rate (bytes per second).
        case uploadTooSlow(minBytesPerSecond: Int)

        var answer: ServerAnswer {
            switch self {
            case .tooLarge(let limit):
                return ServerAnswer(status: 413, code: .payloadTooLarge, detail: "the body is over \(limit) bytes")
            case .bearerTokenRequired:
                return ServerAnswer(Problem.unauthorized(.unauthorized, "an Authorization: Bearer token is required"))
            case .uploadBudgetFull:
                return ServerAnswer(status: 503, code: .serverBusy, detail: "too many uploads are in progress; retry shortly")
            case .uploadTooSlow(let minimum):
                return ServerAnswer(
                    status: 408, code: .requestTimeout, detail: "the upload is slower than \(minimum) bytes per second")
            }
        }
    }

    /// Decides on a request's body once its head is in.
    /// - Parameters:
    ///   - bodyLimit: the route's body limit, in bytes (`maxBodyBytes` unless the route says otherwise).
    ///   - declaredLength: its `Content-Length`, in bytes; nil for a chunked body or none.
    ///   - headers: its header fields, names in lower case (only `authorization` is read, and only
    ///     for an upload).
    func decide(bodyLimit: Int, declaredLength: UInt64?, headers: [(name: String, value: String)]) -> Decision {
        if let declaredLength, declaredLength > UInt64(bodyLimit) {
            return .refuse(.tooLarge(limit: bodyLimit))
        }
        guard bodyLimit > maxBodyBytes else { return .admit }
        let authorization = headers.first { $0.name == "authorization" }?.value ?? ""
        guard authorization.prefix(7).lowercased() == "bearer ",
            !authorization.dropFirst(7).trimmingOptionalWhitespace().isEmpty
        else {
            return .refuse(.bearerTokenRequired)
        }
        return .authorizeUpload(reserving: declaredLength.map { Int($0) } ?? bodyLimit)
    }

    /// Whether an upload that brought `bytes` in the `elapsedMs` milliseconds of its current
    /// window is under the minimum rate (never, with no minimum).
    func isTooSlow(bytes: Int, elapsedMs: Int64) -> Bool {
        bytes * 1000 < minUploadBytesPerSecond * Int(elapsedMs)
    }
}
