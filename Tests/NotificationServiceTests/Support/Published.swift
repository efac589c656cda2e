import Foundation
import Shared

/// The notifications a service database has published so far (its outbox), in order, as
/// (recipient, notification). The one place that knows how notifications travel as events
/// (`notify.created`, one per notification today), so a batched event shape changes only this.
/// - Throws: `SQLiteError`, or a decoding error for an event that does not match its type.
func publishedNotifications(in database: Database) async throws -> [(recipientId: String, notification: Graph.Notification)] {
    try await database.outbox(after: 0, limit: 100_000).events.filter { $0.type == Graph.NotificationCreated.type }.map {
        let body = try WireJSON.decode(EventEnvelope<Graph.NotificationCreated>.self, from: $0.envelope).body
        return (body.recipientId, body.notification)
    }
}
