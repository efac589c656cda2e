import Foundation
import Messages
import ServiceKit
import Storage
import Support
import Wire

@testable import NotificationService

/// Collects what a service delivers (its `NotificationPublisher`'s messages), in order: the one
/// place that knows how notifications travel (one topic message per recipient).
final class DeliveryRecorder: Sendable {
    let messages = Locked<[TopicMessage]>([])

    /// A publisher that records instead of sending.
    var publisher: NotificationPublisher {
        let messages = self.messages
        return NotificationPublisher(sink: { build in
            let built = build { _ in true }
            messages.withLock { $0 += built }
        })
    }

    /// The delivered notifications as (recipient id, notification), the recipient resolved
    /// from its topic's key in `database`.
    /// - Throws: `DatabaseError`, or a decoding error for a payload that is not a notification.
    func notifications(in database: Database) async throws -> [(recipientId: String, notification: Notifications.Notification)] {
        let messages = self.messages.withLock { $0 }
        let ids = try await database.read { c in
            try Dictionary(
                uniqueKeysWithValues: c.query("SELECT key, id FROM identities").map { (try $0.int64("key"), try $0.string("id")) }
            )
        }
        return try messages.map { m in
            let key = NotificationRouting.recipientKey(topic: m.topic) ?? -1
            return (ids[key] ?? "?", try WireJSON.decode(Notifications.Notification.self, from: m.payload))
        }
    }
}
