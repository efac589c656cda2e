import Foundation
import Testing

@testable import BackendKit
@testable import Messages
@testable import ServiceKit
@testable import Support
@testable import Transport
@testable import Wire

/// Notification kinds and error codes as enums: their wire strings never change, and a value
/// this build does not know decodes to `.unknown`, reported once where it is decoded.
struct VocabularyTests {
    /// API.md "Shapes": `type` is `like`, `follow`, `comment`, `tag`, `post`, `follow_request`,
    /// `follow_accepted` or `report_resolved`.
    @Test func notificationKindWireStringsArePinned() throws {
        let pinned: [(NotificationKind, String)] = [
            (.like, "like"), (.follow, "follow"), (.comment, "comment"), (.tag, "tag"), (.post, "post"),
            (.followRequest, "follow_request"), (.followAccepted, "follow_accepted"),
            (.reportResolved, "report_resolved"),
        ]
        #expect(pinned.map(\.0) == NotificationKind.known)
        for (kind, wire) in pinned {
            #expect(kind.wire == wire)
            #expect(NotificationKind(wire: wire) == kind)
            #expect(try WireJSON.encode(kind) == Array("\"\(wire)\"".utf8))
            #expect(try WireJSON.decode(NotificationKind.self, from: Array("\"\(wire)\"".utf8)) == kind)
        }
        #expect(!UnknownWireValues.reported.contains { pinned.map { "notification_kind:\($0.1)" }.contains($0) })
    }

    /// A notification of a kind a newer NotificationService sends decodes (it is not refused),
    /// keeps its string on the way on, is reported once, and is worded by the exhaustive switch.
    @Test func anUnknownNotificationKindDecodesToItsFallbackAndIsReported() throws {
        let json = #"{"id":"x","seq":3,"type":"story_reply","createdAt":"t","read":false,"actorId":"u1"}"#
        let n = try WireJSON.decode(Notifications.Notification.self, from: Array(json.utf8))
        #expect(n.type == .unknown("story_reply"))
        #expect(String(decoding: try WireJSON.encode(n.type), as: UTF8.self) == #""story_reply""#)
        _ = try WireJSON.decode(Notifications.Notification.self, from: Array(json.utf8))
        #expect(UnknownWireValues.reported.filter { $0 == "notification_kind:story_reply" }.count == 1)
        #expect(
            NotificationText.render(type: n.type, actorUsername: "alice", detail: nil) == "alice sent you a notification.")
    }

    /// The codes services put in error replies, as API.md and the gateway's problems name them.
    @Test func errorCodeWireStringsArePinned() {
        let pinned: [(ServiceErrorCode, String)] = [
            (.serviceUnavailable, "service_unavailable"), (.serviceTimeout, "service_timeout"),
            (.deadlineExceeded, "deadline_exceeded"), (.shuttingDown, "shutting_down"), (.busy, "busy"),
            (.internalError, "internal_error"), (.unknownType, "unknown_type"), (.malformedBody, "malformed_body"),
            (.malformedEnvelope, "malformed_envelope"), (.unsupportedVersion, "unsupported_version"),
            (.invalidRequest, "invalid_request"), (.invalidField, "invalid_field"), (.invalidCursor, "invalid_cursor"),
            (.required, "required"), (.unknownField, "unknown_field"), (.tooLong, "too_long"), (.tooMany, "too_many"),
            (.empty, "empty"), (.notFound, "not_found"), (.forbidden, "forbidden"),
            (.invalidCredentials, "invalid_credentials"), (.invalidToken, "invalid_token"),
            (.tooManyAttempts, "too_many_attempts"), (.unknownUser, "unknown_user"), (.usernameTaken, "username_taken"),
            (.emailTaken, "email_taken"), (.duplicateUsername, "duplicate_username"),
            (.duplicateEmail, "duplicate_email"), (.invalidEmail, "invalid_email"),
            (.invalidUsername, "invalid_username"), (.weakPassword, "weak_password"),
            (.passwordTooLong, "password_too_long"), (.invalidPasswordHash, "invalid_password_hash"),
            (.invalidPhone, "invalid_phone"), (.invalidGender, "invalid_gender"),
            (.invalidBirthDate, "invalid_birth_date"), (.validationFailed, "validation_failed"),
            (.cannotFollowSelf, "cannot_follow_self"), (.notClearable, "not_clearable"),
            (.invalidPostType, "invalid_post_type"), (.invalidURL, "invalid_url"),
            (.unsupportedMedia, "unsupported_media"), (.payloadTooLarge, "payload_too_large"),
            (.imageTooLarge, "image_too_large"), (.idempotencyKeyReused, "idempotency_key_reused"),
            (.idempotencyKeyInUse, "idempotency_key_in_use"), (.importsDisabled, "imports_disabled"),
            (.deviceTokenInUse, "device_token_in_use"), (.cannotBlockSelf, "cannot_block_self"),
            (.cannotMuteSelf, "cannot_mute_self"), (.privateAccount, "private_account"), (.blocking, "blocking"),
            (.objectionableContent, "objectionable_content"),
            (.accountSuspended, "account_suspended"), (.cannotReportSelf, "cannot_report_self"),
            (.tooManyReports, "too_many_reports"), (.actionNotApplicable, "action_not_applicable"),
        ]
        #expect(pinned.map(\.0) == ServiceErrorCode.known)
        for (code, wire) in pinned {
            #expect(code.wire == wire)
            #expect(ServiceErrorCode(wire: wire) == code)
            #expect(ServiceError(code, message: "m", status: 400).code == wire)
            #expect(FieldError(field: "f", code, message: "m").code == wire)
        }
        #expect(ServiceErrorCode(wire: "from_the_future") == .unknown("from_the_future"))
    }

    /// An error reply whose code (and field code) this build does not know arrives unchanged
    /// through `RPCClient`, which reports both once: the one place replies are decoded.
    @Test func anUnknownErrorCodeFromAPeerIsReportedWhereTheReplyIsDecoded() async throws {
        let context = ZMQContext()
        let host = ServiceHost(
            name: "newer", context: context, rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*", database: nil,
            logger: Logger(service: "test", minimum: .error))
        host.on(TestRPC.Fail.self) { _, _ in
            throw ServiceError(
                code: "quota_exhausted", message: "newer build", status: 429,
                fields: [FieldError(field: "n", code: "over_quota", message: "m")])
        }
        try host.start()
        defer { host.stop() }
        let client = try RPCClient(
            service: "newer", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context,
            logger: Logger(service: "test", minimum: .error))
        defer { client.shutdown() }
        try await waitUntilConnected(client)
        #expect(!UnknownWireValues.reported.contains("error_code:quota_exhausted"))
        for _ in 0..<2 {
            do {
                _ = try await client.call(TestRPC.Fail.self, Empty(), timeoutMs: 10_000)
                Issue.record("expected an error")
            } catch let e as ServiceError {
                #expect(e.code == "quota_exhausted" && e.status == 429 && e.errorCode == .unknown("quota_exhausted"))
                #expect(e.fields?.first?.errorCode == .unknown("over_quota"))
            }
        }
        let reported = UnknownWireValues.reported
        #expect(reported.filter { $0 == "error_code:quota_exhausted" }.count == 1)
        #expect(reported.filter { $0 == "error_code:over_quota" }.count == 1)
    }
}
