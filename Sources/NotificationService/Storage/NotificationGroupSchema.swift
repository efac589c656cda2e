import Shared

/// The tables of grouped notifications and the badge (migration `notification.12-groups-and-badge`),
/// the same on both engines (SQLite's `WITHOUT ROWID`, `MAX`; PostgreSQL's `GREATEST`):
///
/// - `grp` on both notification tables: the group a row belongs to within its type (the post
///   key of a `like` or `comment`, the UTC day `created_at / 86,400,000` of a `follow`; NULL
///   for `tag` and `post`, never grouped), with a partial index (recipient, type, grp, seq), so
///   a group's newest members are one index range.
/// - `notification_groups`: one row per group of a recipient: `count` (its notifications),
///   `latest_seq` / `latest_at` (Unix ms) of its newest member, `position` (the largest seq
///   ever added: the page order, only ever increasing), `actor1...actor3` (the 3 newest distinct
///   actors, newest first) and `detail` (a like's post type). Kept in the transaction of every
///   insert and removal (`NotificationWriter`, `NotificationRemoval`), never rebuilt on read.
/// - `notifications_singles`, `recent_notifications_singles`: partial indexes (recipient, seq) of
///   `tag` and `post` rows, for the ungrouped items of a page of groups. (On the recent table
///   too: without it, a recipient with many unmerged likes had them all read by a page, 3.6×
///   the time of a small recipient's page at 1,000,000 likes; a fan-out pays one more entry per
///   row in that small table, measured in docs/loadtest.md.)
/// - `notification_suppressed`: the dedup keys (`once`) of notifications an unlike or an unfollow
///   removed, so that repeating the action (like again, follow again) does not notify a second
///   time (API.md) though the notification itself is gone.
/// - `recipients.removed_unread` and `removed_unread(recipient, seq)`: notifications removed
///   while unread (seq above the read mark), so the unread count is head − read − removed,
///   three stored numbers (`SQLNotificationStore.unreadCount`).
///
/// The migration fills all of it from existing rows, once.
enum NotificationGroupSchema {
    /// `notification.12-groups-and-badge` on both engines.
    static func migration(for id: String) -> Migration {
        Migration(id, sqlite: sql(.sqlite), postgres: sql(.postgres))
    }

    static func sql(_ engine: StorageEngine) -> String {
        let int = engine == .sqlite ? "INTEGER" : "BIGINT"
        let greatest = engine == .sqlite ? "MAX" : "GREATEST"
        let withoutRowid = engine == .sqlite ? " WITHOUT ROWID" : ""
        let grp = """
            CASE type WHEN \(NotificationType.like.rawValue) THEN post WHEN \(NotificationType.comment.rawValue) THEN post
                WHEN \(NotificationType.follow.rawValue) THEN created_at / 86400000 END
            """
        return """
            ALTER TABLE notifications ADD COLUMN grp \(int);
            ALTER TABLE recent_notifications ADD COLUMN grp \(int);
            DROP VIEW all_notifications;
            CREATE VIEW all_notifications AS
                SELECT * FROM notifications UNION ALL SELECT * FROM recent_notifications;
            UPDATE notifications SET grp = \(grp) WHERE type IN (1, 2, 3);
            UPDATE recent_notifications SET grp = \(grp) WHERE type IN (1, 2, 3);
            CREATE INDEX notifications_by_group ON notifications(recipient, type, grp, seq) WHERE grp IS NOT NULL;
            CREATE INDEX recent_notifications_by_group ON recent_notifications(recipient, type, grp, seq)
                WHERE grp IS NOT NULL;
            CREATE INDEX notifications_singles ON notifications(recipient, seq) WHERE type IN (4, 5);
            CREATE INDEX recent_notifications_singles ON recent_notifications(recipient, seq) WHERE type IN (4, 5);

            CREATE TABLE notification_groups(
                recipient \(int) NOT NULL,
                type \(int) NOT NULL,
                grp \(int) NOT NULL,
                count \(int) NOT NULL,
                latest_seq \(int) NOT NULL,
                latest_at \(int) NOT NULL,
                position \(int) NOT NULL,
                actor1 \(int) NOT NULL,
                actor2 \(int),
                actor3 \(int),
                detail TEXT,
                PRIMARY KEY(recipient, type, grp))\(withoutRowid);
            CREATE UNIQUE INDEX notification_groups_by_position ON notification_groups(recipient, position);
            INSERT INTO notification_groups(recipient, type, grp, count, latest_seq, latest_at, position, actor1)
                SELECT recipient, type, grp, COUNT(*), MAX(seq), 0, MAX(seq), 0 FROM all_notifications
                WHERE grp IS NOT NULL GROUP BY recipient, type, grp;
            UPDATE notification_groups SET
                latest_at = (SELECT n.created_at FROM all_notifications n
                    WHERE n.recipient = notification_groups.recipient AND n.seq = notification_groups.latest_seq),
                actor1 = (SELECT n.actor FROM all_notifications n
                    WHERE n.recipient = notification_groups.recipient AND n.seq = notification_groups.latest_seq),
                detail = (SELECT n.detail FROM all_notifications n
                    WHERE n.recipient = notification_groups.recipient AND n.seq = notification_groups.latest_seq
                    AND n.type = \(NotificationType.like.rawValue));
            UPDATE notification_groups SET actor2 = (SELECT n.actor FROM all_notifications n
                WHERE n.recipient = notification_groups.recipient AND n.type = notification_groups.type
                AND n.grp = notification_groups.grp AND n.actor <> notification_groups.actor1
                ORDER BY n.seq DESC LIMIT 1);
            UPDATE notification_groups SET actor3 = (SELECT n.actor FROM all_notifications n
                WHERE n.recipient = notification_groups.recipient AND n.type = notification_groups.type
                AND n.grp = notification_groups.grp AND n.actor <> notification_groups.actor1
                AND n.actor <> notification_groups.actor2
                ORDER BY n.seq DESC LIMIT 1) WHERE actor2 IS NOT NULL;

            CREATE TABLE notification_suppressed(
                recipient \(int) NOT NULL,
                actor \(int) NOT NULL,
                type \(int) NOT NULL,
                once \(int) NOT NULL,
                PRIMARY KEY(recipient, actor, type, once))\(withoutRowid);

            ALTER TABLE recipients ADD COLUMN removed_unread \(int) NOT NULL DEFAULT 0;
            CREATE TABLE removed_unread(
                recipient \(int) NOT NULL,
                seq \(int) NOT NULL,
                PRIMARY KEY(recipient, seq))\(withoutRowid);
            -- Every seq up to a recipient's head was handed out once: the ones above the read
            -- mark that no row holds any more were removed unread.
            INSERT INTO recipients(recipient) SELECT DISTINCT recipient FROM all_notifications WHERE true
                ON CONFLICT(recipient) DO NOTHING;
            INSERT INTO removed_unread(recipient, seq)
                WITH RECURSIVE marks(recipient, seq, head) AS (
                    SELECT r.recipient, r.read_seq + 1, \(greatest)(r.merged_head, r.head_floor,
                        COALESCE((SELECT MAX(n.seq) FROM all_notifications n WHERE n.recipient = r.recipient), 0))
                    FROM recipients r
                    UNION ALL SELECT recipient, seq + 1, head FROM marks WHERE seq < head)
                SELECT m.recipient, m.seq FROM marks m WHERE m.seq <= m.head
                    AND NOT EXISTS (SELECT 1 FROM all_notifications n WHERE n.recipient = m.recipient AND n.seq = m.seq);
            UPDATE recipients SET removed_unread = (SELECT COUNT(*) FROM removed_unread t
                WHERE t.recipient = recipients.recipient);
            """
    }
}
