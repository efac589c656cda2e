// ServerAnswer: an answer the HTTP server writes by itself (problem details, `Connection: close`),
// decided by the framing, the admission policy, the responder or the loop, and written by the
// response writer.

/// An answer the server writes by itself (a request it cannot hand to its responder): always
/// problem details, and the connection closes after it.
struct ServerAnswer {
    /// What is answered: status, code, detail and any extra headers (`Allow`, `WWW-Authenticate`).
    var problem: Problem

    /// A problem of the server's own; a 503 says `Retry-After: 1`.
    init(status: Int, code: ProblemCode, detail: String) {
        problem = Problem(status: status, code: code, detail: detail, retryAfter: status == 503 ? 1 : nil)
    }

    /// A problem decided elsewhere (the responder's 405 with `Allow`, a refused upload's 401), as it is.
    init(_ problem: Problem) { self.problem = problem }

    var status: Int { problem.status }
    var code: ProblemCode { problem.code }
    var detail: String { problem.detail }

    /// The response: problem details, `Connection: close`.
    var response: HTTPResponse {
        var r = problem.response
        r.headers.append(("Connection", "close"))
        return r
    }
}
