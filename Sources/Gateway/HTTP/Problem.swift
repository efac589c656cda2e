import Foundation
import Shared

/// An RFC 9457 problem details reply (`application/problem+json`):
/// `{"type", "title", "status", "detail", "code", "errors"?}` where `errors` lists
/// `{field, code, message}` for validation failures.
struct Problem: Error, Sendable {
    var status: Int
    var code: String
    var detail: String
    var errors: [FieldError]?
    /// Seconds for `Retry-After` (429, 503).
    var retryAfter: Int?
    /// Extra response headers (e.g. `WWW-Authenticate`).
    var extraHeaders: [(String, String)] = []

    /// The `type` URI: a stable, dereferenceable-in-principle name per code.
    var type: String {
        "https://docs.insta.example/problems/\(code.replacingOccurrences(of: "_", with: "-"))"
    }

    var response: HTTPResponse {
        var object: [String: Any] = [
            "type": type, "title": HTTPStatus.reason(status), "status": status, "detail": detail,
            "code": code,
        ]
        if let errors, !errors.isEmpty {
            object["errors"] = errors.map { ["field": $0.field, "code": $0.code, "message": $0.message] }
        }
        var headers = [("Content-Type", "application/problem+json")]
        if let retryAfter { headers.append(("Retry-After", "\(retryAfter)")) }
        headers += extraHeaders
        return HTTPResponse(status: status, headers: headers, body: JSONOut.bytes(object))
    }

    /// Maps a service error (or an RPC transport error) to problem details.
    /// Envelope-level errors (a message the service does not know, a deadline passed, a
    /// service stopping) are the gateway's problem, not the client's: 502, 504 and 503.
    init(_ error: ServiceError) {
        self.status = (400...599).contains(error.status) ? error.status : 500
        self.code = error.code
        self.detail = error.message
        self.errors = error.fields
        self.retryAfter = error.retryAfter ?? (error.status == 429 ? 1 : nil)
        switch error.code {
        case "unknown_type", "malformed_body", "malformed_envelope", "unsupported_version":
            (status, code, errors) = (502, "bad_gateway", nil)
        case "deadline_exceeded":
            (status, code) = (504, "service_timeout")
        case "shutting_down":
            (status, code, retryAfter) = (503, "service_unavailable", 1)
        default:
            break
        }
    }

    init(
        status: Int, code: String, detail: String, errors: [FieldError]? = nil, retryAfter: Int? = nil
    ) {
        self.status = status
        self.code = code
        self.detail = detail
        self.errors = errors
        self.retryAfter = retryAfter
    }

    static func invalidField(_ field: String, _ message: String, code: String = "invalid_field")
        -> Problem
    {
        Problem(
            status: 400, code: "invalid_field", detail: "\(field): \(message)",
            errors: [FieldError(field: field, code: code, message: message)])
    }
    static func unknownField(_ field: String) -> Problem {
        Problem(
            status: 400, code: "unknown_field", detail: "unknown field `\(field)`",
            errors: [
                FieldError(field: field, code: "unknown_field", message: "is not a field of this request")
            ])
    }
    static func malformedJSON(_ detail: String) -> Problem {
        Problem(status: 400, code: "malformed_json", detail: detail)
    }
    static func unsupportedMediaType(_ type: String) -> Problem {
        Problem(
            status: 415, code: "unsupported_media_type",
            detail: "the body must be application/json, not \(type)")
    }
    static func payloadTooLarge(_ limit: Int) -> Problem {
        Problem(status: 413, code: "payload_too_large", detail: "the body is over \(limit) bytes")
    }
    static func unauthorized(_ detail: String) -> Problem {
        Problem(status: 401, code: "unauthorized", detail: detail)
    }
    static func notFound(_ detail: String) -> Problem {
        Problem(status: 404, code: "not_found", detail: detail)
    }
    static func methodNotAllowed(_ method: String, allowed: [String]) -> Problem {
        Problem(
            status: 405, code: "method_not_allowed",
            detail: "\(method) is not allowed here; use \(allowed.joined(separator: ", "))")
    }
    static func serviceUnavailable(_ detail: String) -> Problem {
        Problem(status: 503, code: "service_unavailable", detail: detail, retryAfter: 1)
    }
    static func internalError() -> Problem {
        Problem(status: 500, code: "internal_error", detail: "an unexpected error occurred")
    }
}

/// Reason phrases (RFC 9110 §15) used as problem titles.
enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "HTTP \(status)"
        }
    }
}
