import Messages

/// A problem's `code` (and a field error's): the gateway's own codes, and a service's codes
/// passed through as they came. Written on the wire in snake_case (`wire`); the problem's `type`
/// URI is made from it (`Problem.type`).
enum ProblemCode: Hashable, Sendable, CustomStringConvertible {
    /// 400: `Content-Length` with `Transfer-Encoding`, or more than one `Content-Length`.
    case ambiguousLength
    /// 502: a service answered with something the gateway cannot read.
    case badGateway
    /// 400: a request the server cannot parse.
    case badRequest
    /// 400: a header that may appear once appears more than once.
    case duplicateHeader
    /// 417: an `Expect` other than `100-continue`.
    case expectationFailed
    /// 431: the request line and headers are too large, or too many.
    case headerTooLarge
    /// 505: neither HTTP/1.0 nor HTTP/1.1.
    case httpVersionNotSupported
    /// 500: a bug, or an error no one expected.
    case internalError
    /// 400 (a field's code): a page cursor this list did not give out.
    case invalidCursor
    /// 400: a member, query parameter or header has the wrong shape.
    case invalidField
    /// 400: a path segment that cannot be decoded.
    case invalidPath
    /// 400: a query string with an invalid escape.
    case invalidQuery
    /// 401: a bearer token that is unknown, expired or revoked.
    case invalidToken
    /// 400: a body that is not one JSON object, or repeats a member.
    case malformedJSON
    /// 405: the path exists with other methods (`Allow` names them).
    case methodNotAllowed
    /// 501: a method the server does not implement for any path.
    case methodNotImplemented
    /// 404: no such route, media or resource.
    case notFound
    /// 413: a body over its route's limit.
    case payloadTooLarge
    /// 416: a byte range outside the representation.
    case rangeNotSatisfiable
    /// 408: a request (or an upload) that did not arrive in time.
    case requestTimeout
    /// 400 (a field's code): a required member is missing.
    case required
    /// 503: the gateway has no room (connections, uploads, response buffers).
    case serverBusy
    /// 504: a service did not answer in time.
    case serviceTimeout
    /// 503: a service cannot be reached, or the gateway is stopping.
    case serviceUnavailable
    /// 400 (a field's code): a value over its length limit.
    case tooLong
    /// 429: too many notification streams for the account or the address.
    case tooManyStreams
    /// 401: no usable `Authorization: Bearer` credentials.
    case unauthorized
    /// 400: a member the request does not take.
    case unknownField
    /// 415: a body that is not `application/json` (UTF-8).
    case unsupportedMediaType
    /// 501: a transfer coding other than `chunked`.
    case unsupportedTransferCoding
    /// 414: the request target is too long.
    case uriTooLong
    /// A service's own code, none of the above (`username_taken`, `weak_password`, a newer
    /// service's code as it was sent, ...).
    case service(ServiceErrorCode)

    /// Every code of the gateway's own.
    static let gatewayCodes: [ProblemCode] = [
        .ambiguousLength, .badGateway, .badRequest, .duplicateHeader, .expectationFailed, .headerTooLarge,
        .httpVersionNotSupported, .internalError, .invalidCursor, .invalidField, .invalidPath, .invalidQuery, .invalidToken,
        .malformedJSON, .methodNotAllowed, .methodNotImplemented, .notFound, .payloadTooLarge, .rangeNotSatisfiable,
        .requestTimeout, .required, .serverBusy, .serviceTimeout, .serviceUnavailable, .tooLong, .tooManyStreams,
        .unauthorized, .unknownField, .unsupportedMediaType, .unsupportedTransferCoding, .uriTooLong,
    ]

    private static let byWire: [String: ProblemCode] = Dictionary(uniqueKeysWithValues: gatewayCodes.map { ($0.wire, $0) })

    /// A service's code as a problem code: the gateway's own case when it has one of that name
    /// (a service's `not_found` is `.notFound`), else `.service(code)`, so one wire name is
    /// always one value.
    init(_ code: ServiceErrorCode) {
        self = Self.byWire[code.wire] ?? .service(code)
    }

    /// The code named `wire` (see `init(_: ServiceErrorCode)`).
    init(wire: String) {
        self = Self.byWire[wire] ?? .service(ServiceErrorCode(wire: wire))
    }

    /// The snake_case name on the wire (`unknown_field`).
    var wire: String {
        switch self {
        case .ambiguousLength: "ambiguous_length"
        case .badGateway: "bad_gateway"
        case .badRequest: "bad_request"
        case .duplicateHeader: "duplicate_header"
        case .expectationFailed: "expectation_failed"
        case .headerTooLarge: "header_too_large"
        case .httpVersionNotSupported: "http_version_not_supported"
        case .internalError: "internal_error"
        case .invalidCursor: "invalid_cursor"
        case .invalidField: "invalid_field"
        case .invalidPath: "invalid_path"
        case .invalidQuery: "invalid_query"
        case .invalidToken: "invalid_token"
        case .malformedJSON: "malformed_json"
        case .methodNotAllowed: "method_not_allowed"
        case .methodNotImplemented: "method_not_implemented"
        case .notFound: "not_found"
        case .payloadTooLarge: "payload_too_large"
        case .rangeNotSatisfiable: "range_not_satisfiable"
        case .requestTimeout: "request_timeout"
        case .required: "required"
        case .serverBusy: "server_busy"
        case .serviceTimeout: "service_timeout"
        case .serviceUnavailable: "service_unavailable"
        case .tooLong: "too_long"
        case .tooManyStreams: "too_many_streams"
        case .unauthorized: "unauthorized"
        case .unknownField: "unknown_field"
        case .unsupportedMediaType: "unsupported_media_type"
        case .unsupportedTransferCoding: "unsupported_transfer_coding"
        case .uriTooLong: "uri_too_long"
        case .service(let code): code.wire
        }
    }

    var description: String { wire }
}
