import Messages
import Wire

/// An RFC 9457 problem details reply (`application/problem+json`):
/// `{"type", "title", "status", "detail", "code", "errors"?}` where `errors` lists
/// `{field, code, message}` for validation failures.
struct Problem: Error, Sendable {
    var status: Int
    var code: ProblemCode
    var detail: String
    var errors: [FieldError]?
    /// Seconds for `Retry-After` (RFC 9110 §10.2.3; 429, 503).
    var retryAfter: Int?
    /// Extra response headers (e.g. `WWW-Authenticate`, `Allow`).
    var extraHeaders: [(String, String)] = []

    /// The `type` URI: a stable name per code (RFC 9457 §3.1.1).
    var type: String { "https://docs.insta.example/problems/\(code.wire.replacingOccurrences(of: "_", with: "-"))" }

    private struct Body: Encodable {
        var type: String
        var title: String
        var status: Int
        var detail: String
        var code: String
        var errors: [FieldError]?

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(type, forKey: .type)
            try c.encode(title, forKey: .title)
            try c.encode(status, forKey: .status)
            try c.encode(detail, forKey: .detail)
            try c.encode(code, forKey: .code)
            if let errors, !errors.isEmpty { try c.encode(errors, forKey: .errors) }  // only for validation
        }
        enum CodingKeys: String, CodingKey { case type, title, status, detail, code, errors }
    }

    var response: HTTPResponse {
        let body = Body(
            type: type, title: HTTPStatus.reason(status), status: status, detail: detail, code: code.wire, errors: errors)
        var headers = [("Content-Type", "application/problem+json")]
        if let retryAfter { headers.append(("Retry-After", "\(retryAfter)")) }
        headers += extraHeaders
        return HTTPResponse(status: status, headers: headers, body: (try? JSONWriter.encode(body)) ?? [])
    }

    /// Maps a service error (or an RPC transport error) to problem details. Envelope-level
    /// errors (a message the service does not know, a deadline passed, a service stopping) are
    /// the gateway's problem, not the client's: 502, 504 and 503.
    init(_ error: ServiceError) {
        let serviceCode = error.errorCode
        self.status = (400...599).contains(error.status) ? error.status : 500
        self.code = ProblemCode(serviceCode)
        self.detail = error.message
        self.errors = error.fields
        self.retryAfter = error.retryAfter ?? (error.status == 429 || error.status == 503 ? 1 : nil)
        switch serviceCode {
        case .unknownType, .malformedBody, .malformedEnvelope, .unsupportedVersion:
            (status, code, errors) = (502, .badGateway, nil)
        case .deadlineExceeded:
            (status, code) = (504, .serviceTimeout)
        case .shuttingDown:
            (status, code, retryAfter) = (503, .serviceUnavailable, 1)
        default:
            break
        }
    }

    init(status: Int, code: ProblemCode, detail: String, errors: [FieldError]? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors
        self.retryAfter = retryAfter
    }

    /// 400 `invalid_field` naming `field` (the field's own `code` in `errors`).
    static func invalidField(_ field: String, _ message: String, code: ProblemCode = .invalidField) -> Problem {
        invalidField(FieldError(field: field, code: code, message: message))
    }
    /// 400 `invalid_field` with one field error (its field, code and message).
    static func invalidField(_ error: FieldError) -> Problem {
        Problem(status: 400, code: .invalidField, detail: "\(error.field): \(error.message)", errors: [error])
    }
    /// 400 `unknown_field`: the member's name is quoted visibly and, like `errors[].field`, cut
    /// after 64 characters (`String.visibleForMessage`), so a huge name is not echoed back whole.
    static func unknownField(_ field: String) -> Problem {
        Problem(
            status: 400, code: .unknownField, detail: "unknown field `\(field.visibleForMessage())`",
            errors: [
                FieldError(field: field.cutForField(), code: .unknownField, message: "is not a field of this request")
            ])
    }
    static func malformedJSON(_ detail: String, field: String? = nil) -> Problem {
        Problem(
            status: 400, code: .malformedJSON, detail: detail,
            errors: field.map { [FieldError(field: $0, code: .malformedJSON, message: detail)] })
    }
    static func unsupportedMediaType(_ detail: String) -> Problem {
        Problem(status: 415, code: .unsupportedMediaType, detail: detail)
    }
    /// 401 with `WWW-Authenticate: Bearer`: `unauthorized` (no usable credentials) or
    /// `invalid_token`.
    static func unauthorized(_ code: ProblemCode, _ detail: String) -> Problem {
        var p = Problem(status: 401, code: code, detail: detail)
        p.extraHeaders.append(("WWW-Authenticate", "Bearer"))  // RFC 6750 §3
        return p
    }
    static func notFound(_ detail: String) -> Problem { Problem(status: 404, code: .notFound, detail: detail) }
    static func serviceUnavailable(_ detail: String) -> Problem {
        Problem(status: 503, code: .serviceUnavailable, detail: detail, retryAfter: 1)
    }
    static func internalError() -> Problem {
        Problem(status: 500, code: .internalError, detail: "an unexpected error occurred")
    }
}
