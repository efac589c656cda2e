import Storage

/// `report_resolved` (type 8, API.md "Account lifecycle and moderation") is never grouped: the
/// singles' partial indexes (`notifications_singles`, `recent_notifications_singles`, which serve
/// the never-grouped types on the groups page) are made again with it beside `tag`, `post`,
/// `follow_request` and `follow_accepted`.
enum ReportNotificationSchema {
    static func migration(for id: String) -> Migration {
        Migration(
            id,
            """
            DROP INDEX notifications_singles;
            DROP INDEX recent_notifications_singles;
            CREATE INDEX notifications_singles ON notifications(recipient, seq) WHERE type IN (4, 5, 6, 7, 8);
            CREATE INDEX recent_notifications_singles ON recent_notifications(recipient, seq) WHERE type IN (4, 5, 6, 7, 8);
            """)
    }
}
