import Wire

/// The common errors, by their codes in the vocabulary (`ServiceErrorCode`).
extension ServiceError {
    public static func badRequest(_ code: String, _ message: String, fields: [FieldError]? = nil) -> ServiceError {
        ServiceError(code: code, message: message, status: 400, fields: fields)
    }
    /// 400 `invalid_cursor`, naming the `cursor` field: a page cursor the list never gave out.
    public static func invalidCursor(_ message: String = "cursor is not one this list gave out") -> ServiceError {
        badRequest(.invalidCursor, message, fields: [FieldError(field: "cursor", .invalidCursor, message: message)])
    }
    /// A validation failure (400) naming every offending field in `fields`. The top-level code
    /// is `code`, by default `invalid_field` (API.md: "wrong type or range"); AuthService passes
    /// the single field's own code for the codes API.md lists for registration
    /// (`invalid_email`, `invalid_username`, `weak_password`).
    public static func validation(_ fields: [FieldError], code: String = "invalid_field") -> ServiceError {
        let message = fields.map { "\($0.field): \($0.message)" }.joined(separator: "; ")
        return ServiceError(code: code, message: message, status: 400, fields: fields)
    }
    public static func notFound(_ what: String) -> ServiceError {
        ServiceError(.notFound, message: "\(what) not found", status: 404)
    }
    public static func forbidden(_ message: String) -> ServiceError {
        ServiceError(.forbidden, message: message, status: 403)
    }
    public static func conflict(_ code: String, _ message: String) -> ServiceError {
        ServiceError(code: code, message: message, status: 409)
    }
    public static func unprocessable(_ code: String, _ message: String) -> ServiceError {
        ServiceError(code: code, message: message, status: 422)
    }
    public static func unauthorized(_ code: String, _ message: String) -> ServiceError {
        ServiceError(code: code, message: message, status: 401)
    }
    public static func `internal`(_ message: String) -> ServiceError {
        ServiceError(.internalError, message: message, status: 500)
    }
    /// The service could not be reached (no connected peer, or it went away mid-request).
    public static func unavailable(_ service: String) -> ServiceError {
        ServiceError(.serviceUnavailable, message: "\(service) is unavailable", status: 503)
    }
    /// The service did not answer before the deadline.
    public static func timeout(_ service: String) -> ServiceError {
        ServiceError(.serviceTimeout, message: "\(service) did not answer in time", status: 504)
    }
}
