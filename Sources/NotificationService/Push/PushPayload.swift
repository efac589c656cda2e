import APNs
import Foundation
import Wire

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

    /// The payload's bytes, the text shortened (ending in `…`) to fit `maxBytes`: as many whole
    /// characters (grapheme clusters) as fit, counted in the bytes each takes in the encoded
    /// JSON; when not even the first fits (one character can be thousands of combining marks),
    /// as many Unicode scalars as fit.
    static func payload(_ push: ClaimedPush) -> [UInt8] {
        func encode(_ text: String) -> [UInt8] {
            let body = Body(
                aps: .init(alert: .init(body: text), badge: push.badge, threadID: push.type.kind.wire),
                notificationId: push.notificationId, seq: push.seq)
            // The wire format's writer (Shared/Wire): a push is encoded per device, and
            // Foundation's JSONEncoder takes about 1.8× as long for objects of this size
            // (`Benchmarks json`: 4.5 against 2.5 µs for a PublicUser).
            return (try? JSONWriter.encode(body)) ?? []
        }
        let whole = encode(push.text)
        guard whole.count > maxBytes else { return whole }
        // What the text may take, encoded, with the `…` (3 bytes) after it.
        var budget = maxBytes - encode("").count - 3
        var kept = ""
        for character in push.text {
            let size = jsonBytes(character.unicodeScalars)
            if size > budget { break }
            budget -= size
            kept.append(character)
        }
        if kept.isEmpty {
            var scalars = String.UnicodeScalarView()
            for scalar in push.text.unicodeScalars {
                let size = jsonBytes(CollectionOfOne(scalar))
                if size > budget { break }
                budget -= size
                scalars.append(scalar)
            }
            kept = String(scalars)
        }
        return encode(kept + "…")
    }

    /// The bytes `scalars` take inside a JSON string: 2 for `"` and `\`, 6 for other control
    /// characters (`\uXXXX`; at most, for `\n` and the like take 2), else their UTF-8 length.
    static func jsonBytes(_ scalars: some Sequence<Unicode.Scalar>) -> Int {
        scalars.reduce(0) { total, s in
            total
                + (s == "\"" || s == "\\"
                    ? 2 : s.value < 0x20 ? 6 : s.value < 0x80 ? 1 : s.value < 0x800 ? 2 : s.value < 0x10000 ? 3 : 4)
        }
    }

    /// The message for `push`.
    static func message(_ push: ClaimedPush) -> PushMessage {
        PushMessage(
            deviceToken: push.token, collapseID: push.collapseID ?? push.notificationId, priority: 10,
            expiration: (push.createdAt + lifetimeMs) / 1_000, payload: payload(push))
    }
}
