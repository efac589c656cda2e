import APNs
import Foundation
import Shared

/// The APNs request of a claimed push (API.md "Devices and push"): the payload
/// `{"aps": {"alert": {"body": text}, "badge": unread, "sound": "default", "thread-id": type},
/// "notificationId": id, "seq": seq}` (at most 4,096 bytes: a longer text is cut), priority 10,
/// expiring a day after the notification was queued, and its `apns-collapse-id`
/// (`PushQueue.collapseID(for:)`; the notification's own id when none was stored).
enum PushPayload {
    /// Apple's limit for an alert push's payload, in bytes.
    static let maxBytes = 4_096
    /// How long APNs keeps trying a push it could not deliver, from when it was queued (ms).
    static let lifetimeMs: Int64 = 86_400_000

    struct Body: Encodable {
        struct APS: Encodable {
            struct Alert: Encodable { var body: String }
            var alert: Alert
            var badge: Int
            var sound = "default"
            var threadID: String
            enum CodingKeys: String, CodingKey {
                case alert, badge, sound
                case threadID = "thread-id"
            }
        }
        var aps: APS
        var notificationId: String
        var seq: Int64
    }

    /// The payload's bytes, the text shortened (ending in `…`) until it fits `maxBytes`.
    static func payload(_ push: ClaimedPush) -> [UInt8] {
        var text = push.text
        while true {
            let body = Body(
                aps: .init(alert: .init(body: text), badge: push.badge, threadID: push.type.kind.wire),
                notificationId: push.notificationId, seq: push.seq)
            // The wire format's writer (Shared/Wire): a push is encoded per device, and
            // Foundation's JSONEncoder takes about 1.8× as long for objects of this size
            // (`Benchmarks json`: 4.5 against 2.5 µs for a PublicUser).
            let bytes = (try? JSONWriter.encode(body)) ?? []
            let over = bytes.count - maxBytes
            if over <= 0 || text.isEmpty { return bytes }
            // A character takes 1 to 6 bytes in JSON (`\uXXXX`): dropping over / 6 of them (and
            // the `…` added before) never cuts more than needed; a few rounds converge.
            text = String(text.hasSuffix("…") ? text.dropLast() : text[...])
            text = String(text.dropLast(over / 6 + 1))
            text = text.isEmpty ? "" : text + "…"
        }
    }

    /// The message for `push`.
    static func message(_ push: ClaimedPush) -> PushMessage {
        PushMessage(
            deviceToken: push.token, collapseID: push.collapseID ?? push.notificationId, priority: 10,
            expiration: (push.createdAt + lifetimeMs) / 1_000, payload: payload(push))
    }
}
