// ServerAnswer: an answer the HTTP server writes by itself (problem details, `Connection: close`),
// decided by the framing, the admission policy or the loop, and written by the response writer.

/// An answer the server writes by itself (a request it cannot hand to the router).
struct ServerAnswer {
    var status: Int
    var code: String
    var detail: String
    /// A complete answer given by the gateway (e.g. the router's 405), used instead of the above.
    var given: HTTPResponse?

    init(status: Int, code: String, detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    init(_ response: HTTPResponse) {
        self.init(status: response.status, code: "", detail: "")
        given = response
    }

    /// The response: problem details, `Connection: close`.
    var response: HTTPResponse {
        var r = given ?? Problem(status: status, code: code, detail: detail, retryAfter: status == 503 ? 1 : nil).response
        r.headers.append(("Connection", "close"))
        return r
    }
}
