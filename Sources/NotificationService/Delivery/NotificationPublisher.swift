import Messages
import ServiceKit
import Wire

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
        // Encoded once with sentinels where `id` and `seq` go: the bytes around them are the
        // same for every recipient, so each message is three copies and two small writes.
        var blank = template
        blank.id = idSentinel
        blank.seq = seqSentinel
        guard let bytes = try? WireJSON.encode(blank) else { return [] }
        let idMark = Array(#""id":"\#(idSentinel)""#.utf8)
        let seqMark = Array(#""seq":\#(seqSentinel)"#.utf8)
        guard let idAt = onlyOccurrence(of: idMark, in: bytes), let seqAt = onlyOccurrence(of: seqMark, in: bytes),
            idAt + idMark.count <= seqAt
        else {
            // The sentinels collide with the template's text: encode each (correct, slower).
            return recipients.compactMap { r in
                var n = template
                n.id = ids.id(recipient: r.key, seq: r.seq)
                n.seq = r.seq
                return (try? WireJSON.encode(n)).map { TopicMessage(topic: r.topic, payload: $0) }
            }
        }
        let before = bytes[..<idAt]
        let between = bytes[(idAt + idMark.count)..<seqAt]
        let after = bytes[(seqAt + seqMark.count)...]
        var out: [TopicMessage] = []
        out.reserveCapacity(recipients.count)
        for r in recipients {
            var payload: [UInt8] = []
            payload.reserveCapacity(bytes.count + 32)
            payload += before
            payload += #""id":""#.utf8
            payload += ids.id(recipient: r.key, seq: r.seq).utf8
            payload.append(UInt8(ascii: "\""))
            payload += between
            payload += #""seq":"#.utf8
            payload += String(r.seq).utf8
            payload += after
            out.append(TopicMessage(topic: r.topic, payload: payload))
        }
        return out
    }

    /// Values no notification has, marking where each recipient's `id` and `seq` go.
    private static let idSentinel = "~recipient-id~"
    private static let seqSentinel: Int64 = -7_919_313_797_212_345_679

    /// The offset of the one occurrence of `pattern` in `bytes`, or nil for none or several.
    static func onlyOccurrence(of pattern: [UInt8], in bytes: [UInt8]) -> Int? {
        var found: Int?
        var i = 0
        while i + pattern.count <= bytes.count {
            if bytes[i] == pattern[0], bytes[i..<(i + pattern.count)].elementsEqual(pattern) {
                if found != nil { return nil }
                found = i
            }
            i += 1
        }
        return found
    }
}
