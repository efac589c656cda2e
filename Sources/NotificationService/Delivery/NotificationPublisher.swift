import Shared

/// Hands stored notifications to routed delivery (`NotificationRouting`): one message per
/// recipient on the recipient's topic, built on the publisher's socket thread from one template
/// per batch (a fan-out batch shares everything but the id and seq), so the database's writer
/// never waits for encoding or sending.
///
/// Delivery is best effort by design: the notifications are already committed, and a gateway
/// that misses one repairs it by seq from `notification.since` (gap, `notification.heads`, welcome).
final class NotificationPublisher: Sendable {
    private let sink: @Sendable (@escaping TopicPublisher.Builder) -> Void

    /// Publishes on `publisher`.
    convenience init(_ publisher: TopicPublisher) {
        self.init(sink: { publisher.publish($0) })
    }

    /// Publishes through `sink` (tests collect the messages; `none` drops them).
    init(sink: @escaping @Sendable (@escaping TopicPublisher.Builder) -> Void) {
        self.sink = sink
    }

    /// Drops everything (a service built without a delivery socket).
    static let none = NotificationPublisher(sink: { _ in })

    /// Publishes `template` to each recipient with its own id (made by `ids`) and seq (built
    /// only for the recipients someone subscribed to).
    func publish(_ template: Notifications.Notification, to recipients: [(key: Int64, seq: Int64)], ids: NotificationIds) {
        sink { isSubscribed in Self.messages(template, recipients, ids: ids, isSubscribed) }
    }

    /// The messages for the recipients `isSubscribed` accepts: `template` with each one's `id`
    /// and `seq`.
    static func messages(
        _ template: Notifications.Notification, _ recipients: [(key: Int64, seq: Int64)], ids: NotificationIds,
        _ isSubscribed: ([UInt8]) -> Bool
    ) -> [TopicMessage] {
        let recipients = recipients.compactMap { r -> (key: Int64, seq: Int64, topic: [UInt8])? in
            let topic = NotificationRouting.topic(recipientKey: r.key)
            return isSubscribed(topic) ? (r.key, r.seq, topic) : nil
        }
        if recipients.isEmpty { return [] }
        var blank = template
        blank.id = ""
        blank.seq = 0
        guard let bytes = try? WireJSON.encode(blank) else { return [] }
        // `id` and `seq` are the first two members (declaration order), so everything after
        // them is the same for all recipients.
        let head = Array(#"{"id":"","seq":0"#.utf8)
        guard bytes.starts(with: head) else {
            // Another member order: encode each (correct, slower).
            return recipients.compactMap { r in
                var n = template
                n.id = ids.id(recipient: r.key, seq: r.seq)
                n.seq = r.seq
                return (try? WireJSON.encode(n)).map { TopicMessage(topic: r.topic, payload: $0) }
            }
        }
        let tail = bytes[head.count...]
        var out: [TopicMessage] = []
        out.reserveCapacity(recipients.count)
        for r in recipients {
            let seq = String(r.seq)
            var payload: [UInt8] = []
            payload.reserveCapacity(tail.count + 56)
            payload += #"{"id":""#.utf8
            payload += ids.id(recipient: r.key, seq: r.seq).utf8
            payload += #"","seq":"#.utf8
            payload += seq.utf8
            payload += tail
            out.append(TopicMessage(topic: r.topic, payload: payload))
        }
        return out
    }
}
