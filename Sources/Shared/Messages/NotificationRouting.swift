import Wire

/// Routed delivery of notifications: NotificationService publishes each stored notification on
/// its delivery socket (`NOTIFICATION_DELIVERY_BIND`, a `TopicPublisher`) under its recipient's
/// topic, and a gateway subscribes (a `TopicSubscriber`) only to the recipients whose streams
/// it holds. Frames: `[topic, Notifications.Notification JSON]`, or `[topic]` alone for a welcome.
/// Delivery is best effort; a gateway repairs what it misses by `seq` (`notification.since`,
/// `notification.heads`).
public enum NotificationRouting {
    /// `n` and the recipient key as 16 lower-case hex digits: fixed width, so no topic is a
    /// prefix of another (libzmq matches subscriptions by prefix).
    public static func topic(recipientKey: Int64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 17)
        out[0] = UInt8(ascii: "n")
        var v = UInt64(bitPattern: recipientKey)
        for i in stride(from: 16, through: 1, by: -1) {
            let d = UInt8(v & 0xF)
            out[i] = d < 10 ? 48 + d : 87 + d
            v >>= 4
        }
        return out
    }

    /// The recipient key of a topic made by `topic(recipientKey:)`, nil for anything else.
    public static func recipientKey(topic: [UInt8]) -> Int64? {
        guard topic.count == 17, topic[0] == UInt8(ascii: "n") else { return nil }
        var v: UInt64 = 0
        for c in topic[1...] {
            switch c {
            case 48...57: v = v << 4 | UInt64(c - 48)
            case 97...102: v = v << 4 | UInt64(c - 87)
            default: return nil
            }
        }
        return Int64(bitPattern: v)
    }
}
