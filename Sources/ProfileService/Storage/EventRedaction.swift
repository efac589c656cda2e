import BackendKit
import Messages
import Storage
import Wire

/// The last step of a deleted account's erasure here: its past events in ProfileService's outbox
/// (captions, comment texts, likes, tags; `Outbox.redact`) become `redacted`, so the replay log
/// keeps nothing of it (migration `profile.10-event-redaction`).
///
/// It starts on NotificationService's `notification.account.erased`, not on this service's own
/// `profile.account.erased`: NotificationService, the subscriber of these events, sends it only
/// after it has applied every event before `profile.account.erased`, so no event it still needs is
/// redacted under it. The outbox is walked in windows of `window` seqs, one transaction each, from
/// `outbox_redactions(user_id, scanned, through)`, resumable after a crash.
enum EventRedaction {
    static func migration(for id: String) -> Migration {
        Migration(
            id,
            """
            CREATE TABLE outbox_redactions(
                user_id TEXT PRIMARY KEY, scanned \(SQL.bigint) NOT NULL, through \(SQL.bigint) NOT NULL);
            """)
    }

    /// Queues `userId`'s redaction up to the outbox's head (once).
    static func begin(_ userId: String, in tx: Transaction) throws {
        try tx.query(
            """
            INSERT INTO outbox_redactions(user_id, scanned, through) VALUES (\(userId), 0, \(Outbox.head(in: tx)))
            ON CONFLICT (user_id) DO NOTHING
            """)
    }

    /// NotificationService's end of an erasure starts the redaction (`began` rings the eraser).
    static func subscribe(_ subscriber: EventSubscriber, began: @escaping @Sendable () -> Void) {
        subscriber.on(Notifications.AccountErased.self) { event, tx in
            try begin(event.body.userId, in: tx)
            began()
            return .applied
        }
    }

    /// The first queued redaction, if any.
    static func next(on c: DatabaseConnection) throws -> String? {
        try c.queryOne("SELECT user_id FROM outbox_redactions ORDER BY user_id LIMIT 1").map { try $0.string("user_id") }
    }

    /// One window of `userId`'s redaction. - Returns: the events redacted in it, or nil when the
    /// redaction is done (its row removed).
    static func step(_ userId: String, window: Int, in tx: Transaction) throws -> Int? {
        guard
            let row = try tx.connection.queryOne(
                "SELECT scanned, through FROM outbox_redactions WHERE user_id = \(userId)\(SQL.forUpdate)")
        else { return nil }
        let (scanned, through) = (try row.int64("scanned"), try row.int64("through"))
        guard scanned < through else {
            try tx.query("DELETE FROM outbox_redactions WHERE user_id = \(userId)")
            return nil
        }
        let upTo = min(through, scanned + Int64(window))
        let n = try Outbox.redact(
            mentioning: userId, after: scanned, through: upTo, keeping: [Profile.AccountErased.type], in: tx)
        try tx.query("UPDATE outbox_redactions SET scanned = \(upTo) WHERE user_id = \(userId)")
        return n
    }
}
