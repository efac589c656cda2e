import Foundation
import Support
import Wire

/// The vocabularies services exchange as strings on the wire (notification kinds, error codes)
/// as enums, and the one place a value this build does not know is reported.
///
/// A peer built from an older or newer version may send a kind or code this build has no case
/// for. It decodes to `.unknown(<the string>)` where it is decoded (`Codable` for
/// `NotificationKind`, `RPCClient` for a reply's `ServiceError`), is logged there once per
/// process and value (`wire.unknown_value`), and is passed on unchanged; no handler needs a
/// `default:` for it.
public enum UnknownWireValues {
    private static let state = Locked<(logger: Logger?, seen: Set<String>, reported: [String])>((nil, [], []))

    /// Logs unknown values with `logger` from now on (a service's runtime sets its own; before
    /// that a logger named after the process is used).
    public static func log(with logger: Logger) {
        state.withLock { $0.logger = logger }
    }

    /// Records that `value` of `vocabulary` is unknown here; logs it the first time.
    public static func report(_ vocabulary: String, _ value: String) {
        let key = "\(vocabulary):\(value)"
        let logger: Logger? = state.withLock { s in
            guard s.seen.insert(key).inserted else { return nil }
            s.reported.append(key)
            return s.logger ?? Logger(service: ProcessInfo.processInfo.processName)
        }
        logger?.warning("wire.unknown_value", metadata: ["vocabulary": vocabulary, "value": value])
    }

    /// What has been reported so far, as `<vocabulary>:<value>`, in order (each once).
    public static var reported: [String] { state.withLock { $0.reported } }
}

/// What a notification is about: API.md "Shapes" `Notification.type` (`like`, `follow`,
/// `comment`, `tag`, `post`). On the wire it is that string; a string this build does not know
/// decodes to `.unknown` and is reported (`UnknownWireValues`).
public enum NotificationKind: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Someone liked the recipient's post.
    case like
    /// Someone started following the recipient.
    case follow
    /// Someone commented on the recipient's post.
    case comment
    /// Someone tagged the recipient in a post.
    case tag
    /// Someone the recipient follows (with `notifyPosts`) shared a new post.
    case post
    /// Someone asked to follow the recipient's private account (never grouped).
    case followRequest
    /// The private account the recipient asked to follow accepted (never grouped).
    case followAccepted
    /// A moderator resolved a report the recipient filed (never grouped; the text never names
    /// the moderator: API.md "Account lifecycle and moderation").
    case reportResolved
    /// A kind from a newer or older peer, as it was sent.
    case unknown(String)

    /// Every kind this build knows.
    public static let known: [NotificationKind] = [
        .like, .follow, .comment, .tag, .post, .followRequest, .followAccepted, .reportResolved,
    ]

    /// The kind named `wire` (`.unknown(wire)` for a name this build does not know; not reported:
    /// see `init(from:)`).
    public init(wire: String) {
        self = Self.known.first { $0.wire == wire } ?? .unknown(wire)
    }

    /// The wire string.
    public var wire: String {
        switch self {
        case .like: "like"
        case .follow: "follow"
        case .comment: "comment"
        case .tag: "tag"
        case .post: "post"
        case .followRequest: "follow_request"
        case .followAccepted: "follow_accepted"
        case .reportResolved: "report_resolved"
        case .unknown(let s): s
        }
    }

    public var description: String { wire }

    /// Decodes the string; an unknown one is reported to `UnknownWireValues`.
    public init(from decoder: any Decoder) throws {
        let s = try decoder.singleValueContainer().decode(String.self)
        self.init(wire: s)
        if case .unknown = self { UnknownWireValues.report("notification_kind", s) }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(wire)
    }
}

/// The `code` of a service's error reply (`ServiceError.code`) and of its field errors
/// (`FieldError.code`): stable snake_case strings, the ones API.md and the gateway's problem
/// details use. `ServiceError.code` stays a string on the wire; `ServiceError.errorCode` is this
/// enum, and `RPCClient` reports a code from a peer that this build does not know.
public enum ServiceErrorCode: Hashable, Sendable, CustomStringConvertible {
    case serviceUnavailable
    case serviceTimeout
    case deadlineExceeded
    case shuttingDown
    case busy
    case internalError
    case unknownType
    case malformedBody
    case malformedEnvelope
    case unsupportedVersion
    case invalidRequest
    case invalidField
    case invalidCursor
    case required
    case unknownField
    case tooLong
    case tooMany
    case empty
    case notFound
    case forbidden
    case invalidCredentials
    case invalidToken
    case tooManyAttempts
    case unknownUser
    case usernameTaken
    case emailTaken
    case duplicateUsername
    case duplicateEmail
    case invalidEmail
    case invalidUsername
    case weakPassword
    case passwordTooLong
    case invalidPasswordHash
    case invalidPhone
    case invalidGender
    case invalidBirthDate
    case validationFailed
    case cannotFollowSelf
    case notClearable
    case invalidPostType
    case invalidURL
    case unsupportedMedia
    case payloadTooLarge
    case imageTooLarge
    /// 422: an `Idempotency-Key` already used by the same user for a different request
    /// (draft-ietf-httpapi-idempotency-key-header, "Error Scenarios").
    case idempotencyKeyReused
    /// 409: an `Idempotency-Key` whose first request is still being processed (same draft).
    case idempotencyKeyInUse
    /// 403: a bulk import (`auth.import_users`, `auth.import_sessions`,
    /// `notification.import_follows`, `notification.import_devices`) to a service that does
    /// not allow imports (`ALLOW_IMPORTS`).
    case importsDisabled
    /// 409: an APNs device token another account holds, registered from another app
    /// installation (API.md "Devices and push").
    case deviceTokenInUse
    /// 422: blocking or muting oneself (API.md "Privacy and safety").
    case cannotBlockSelf
    case cannotMuteSelf
    /// 403: a private account's posts and lists, for someone who does not follow it.
    case privateAccount
    /// 409: an action toward a user the caller blocks (unblock first).
    case blocking
    /// 422: a caption, comment, bio, name or username containing a term of the operator's word
    /// list (`WordList`, `MODERATION_WORDS_FILE`; API.md "Privacy and safety"), each refused
    /// field named with this code.
    case objectionableContent
    /// 403: login, or a moderator's suspension of an account that is already gone, for an
    /// account a moderator suspended (API.md "Account lifecycle and moderation").
    case accountSuspended
    /// 422: reporting one's own account or content (API.md "Account lifecycle and moderation").
    case cannotReportSelf
    /// 429: more reports than an account may file in an hour (`PROFILE_REPORTS_PER_HOUR`).
    case tooManyReports
    /// 422: a moderation action that does not apply to the report's target (`remove_content`
    /// on an account).
    case actionNotApplicable
    /// A code from a newer or older peer, as it was sent.
    case unknown(String)

    /// Every code this build knows.
    public static let known: [ServiceErrorCode] = [
        .serviceUnavailable, .serviceTimeout, .deadlineExceeded, .shuttingDown, .busy, .internalError, .unknownType,
        .malformedBody, .malformedEnvelope, .unsupportedVersion, .invalidRequest, .invalidField, .invalidCursor, .required,
        .unknownField, .tooLong, .tooMany, .empty, .notFound, .forbidden, .invalidCredentials, .invalidToken, .tooManyAttempts,
        .unknownUser, .usernameTaken, .emailTaken, .duplicateUsername, .duplicateEmail, .invalidEmail, .invalidUsername,
        .weakPassword, .passwordTooLong, .invalidPasswordHash, .invalidPhone, .invalidGender, .invalidBirthDate,
        .validationFailed, .cannotFollowSelf, .notClearable, .invalidPostType, .invalidURL, .unsupportedMedia, .payloadTooLarge,
        .imageTooLarge, .idempotencyKeyReused, .idempotencyKeyInUse, .importsDisabled, .deviceTokenInUse, .cannotBlockSelf,
        .cannotMuteSelf, .privateAccount, .blocking, .objectionableContent, .accountSuspended, .cannotReportSelf,
        .tooManyReports, .actionNotApplicable,
    ]

    private static let byWire: [String: ServiceErrorCode] = Dictionary(
        uniqueKeysWithValues: known.map { ($0.wire, $0) })

    /// The code named `wire` (`.unknown(wire)` for one this build does not know; not reported).
    public init(wire: String) {
        self = Self.byWire[wire] ?? .unknown(wire)
    }

    /// The code named `wire`, reporting it to `UnknownWireValues` when unknown: for codes
    /// received from a peer.
    public static func decode(_ wire: String) -> ServiceErrorCode {
        let code = ServiceErrorCode(wire: wire)
        if case .unknown = code { UnknownWireValues.report("error_code", wire) }
        return code
    }

    /// The wire string.
    public var wire: String {
        switch self {
        case .serviceUnavailable: "service_unavailable"
        case .serviceTimeout: "service_timeout"
        case .deadlineExceeded: "deadline_exceeded"
        case .shuttingDown: "shutting_down"
        case .busy: "busy"
        case .internalError: "internal_error"
        case .unknownType: "unknown_type"
        case .malformedBody: "malformed_body"
        case .malformedEnvelope: "malformed_envelope"
        case .unsupportedVersion: "unsupported_version"
        case .invalidRequest: "invalid_request"
        case .invalidField: "invalid_field"
        case .invalidCursor: "invalid_cursor"
        case .required: "required"
        case .unknownField: "unknown_field"
        case .tooLong: "too_long"
        case .tooMany: "too_many"
        case .empty: "empty"
        case .notFound: "not_found"
        case .forbidden: "forbidden"
        case .invalidCredentials: "invalid_credentials"
        case .invalidToken: "invalid_token"
        case .tooManyAttempts: "too_many_attempts"
        case .unknownUser: "unknown_user"
        case .usernameTaken: "username_taken"
        case .emailTaken: "email_taken"
        case .duplicateUsername: "duplicate_username"
        case .duplicateEmail: "duplicate_email"
        case .invalidEmail: "invalid_email"
        case .invalidUsername: "invalid_username"
        case .weakPassword: "weak_password"
        case .passwordTooLong: "password_too_long"
        case .invalidPasswordHash: "invalid_password_hash"
        case .invalidPhone: "invalid_phone"
        case .invalidGender: "invalid_gender"
        case .invalidBirthDate: "invalid_birth_date"
        case .validationFailed: "validation_failed"
        case .cannotFollowSelf: "cannot_follow_self"
        case .notClearable: "not_clearable"
        case .invalidPostType: "invalid_post_type"
        case .invalidURL: "invalid_url"
        case .unsupportedMedia: "unsupported_media"
        case .payloadTooLarge: "payload_too_large"
        case .imageTooLarge: "image_too_large"
        case .idempotencyKeyReused: "idempotency_key_reused"
        case .idempotencyKeyInUse: "idempotency_key_in_use"
        case .importsDisabled: "imports_disabled"
        case .deviceTokenInUse: "device_token_in_use"
        case .cannotBlockSelf: "cannot_block_self"
        case .cannotMuteSelf: "cannot_mute_self"
        case .privateAccount: "private_account"
        case .blocking: "blocking"
        case .objectionableContent: "objectionable_content"
        case .accountSuspended: "account_suspended"
        case .cannotReportSelf: "cannot_report_self"
        case .tooManyReports: "too_many_reports"
        case .actionNotApplicable: "action_not_applicable"
        case .unknown(let s): s
        }
    }

    public var description: String { wire }
}

extension ServiceError {
    /// An error with a named code.
    public init(
        _ code: ServiceErrorCode, message: String, status: Int, fields: [FieldError]? = nil, retryAfter: Int? = nil
    ) {
        self.init(code: code.wire, message: message, status: status, fields: fields, retryAfter: retryAfter)
    }

    /// `code` by name.
    public var errorCode: ServiceErrorCode { ServiceErrorCode(wire: code) }

    /// 400 with a named code.
    public static func badRequest(_ code: ServiceErrorCode, _ message: String, fields: [FieldError]? = nil) -> ServiceError {
        ServiceError(code, message: message, status: 400, fields: fields)
    }
    /// 409 with a named code.
    public static func conflict(_ code: ServiceErrorCode, _ message: String) -> ServiceError {
        ServiceError(code, message: message, status: 409)
    }
    /// 422 with a named code.
    public static func unprocessable(_ code: ServiceErrorCode, _ message: String) -> ServiceError {
        ServiceError(code, message: message, status: 422)
    }
    /// 401 with a named code.
    public static func unauthorized(_ code: ServiceErrorCode, _ message: String) -> ServiceError {
        ServiceError(code, message: message, status: 401)
    }
    /// A validation failure (400) naming every field, with a named top-level code.
    public static func validation(_ fields: [FieldError], named code: ServiceErrorCode) -> ServiceError {
        validation(fields, code: code.wire)
    }

    /// This error as received from a peer: its code and field codes checked against this
    /// build's vocabulary, unknown ones reported once (`UnknownWireValues`).
    public func receivedFromPeer() -> ServiceError {
        _ = ServiceErrorCode.decode(code)
        for f in fields ?? [] { _ = ServiceErrorCode.decode(f.code) }
        return self
    }
}

extension FieldError {
    /// A field error with a named code.
    public init(field: String, _ code: ServiceErrorCode, message: String) {
        self.init(field: field, code: code.wire, message: message)
    }

    /// `code` by name.
    public var errorCode: ServiceErrorCode { ServiceErrorCode(wire: code) }
}
