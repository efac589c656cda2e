import Storage

/// The tables of grouped notifications and the badge (migration `notification.12-groups-and-badge`),
/// the same on both engines (SQLite's `WITHOUT ROWID`, `MAX`; PostgreSQL's `GREATEST`):
///
/// - `grp` on both notification tables: the group a row belongs to within its type (the post
///   key of a `like` or `comment`, the UTC day `created_at / 86,400,000` of a `follow`; NULL
///   for `tag` and `post`, never grouped), with a partial index (recipient, type, grp, seq), so
///   a group's newest members are one index range (on the recent table, other indexes since
///   `notification.13-groups-on-insert`: see `onInsertMigration`).
/// - `notification_groups`: one row per group of a recipient: `count` (its notifications),
///   `latest_seq` / `latest_at` (Unix ms) of its newest member, `position` (the largest seq
///   ever added: the page order, only ever increasing), `actor1...actor3` (the 3 newest distinct
///   actors, newest first) and `detail` (a like's post type). Kept in the transaction of every
///   insert (a trigger since `notification.13-groups-on-insert`) and removal
///   (`NotificationRemoval`), never rebuilt on read.
/// - `notifications_singles`, `recent_notifications_singles`: partial indexes (recipient, seq) of
///   `tag` and `post` rows, for the ungrouped items of a page of groups. (On the recent table
///   too: without it, a recipient with many unmerged likes had them all read by a page, 3.6×
///   the time of a small recipient's page at 1,000,000 likes; a fan-out pays one more entry per
///   row in that small table, measured in docs/loadtest.md.)
/// - `notification_suppressed` (`push_suppressed` since `notification.16-push-suppressed`): the
///   dedup keys (`once`) of notifications an unlike or an unfollow removed. Until migration 16
///   they stopped a repeated action from notifying again; since then a redo notifies again (one
///   notification while the action stands, API.md) and the key only stops a second push.
/// - `recipients.removed_unread` and `removed_unread(recipient, seq)`: notifications removed
///   while unread (seq above the read mark), so the unread count is head − read − removed,
///   three stored numbers (`SQLNotificationStore.unreadCount`).
///
/// The migration fills all of it from existing rows, once.
enum NotificationGroupSchema {
    /// `notification.12-groups-and-badge` on both engines.
    static func migration(for id: String) -> Migration {
        Migration(id, sql)
    }

    /// The migration's statements, written once: `SQL.bigint`, `SQL.withoutRowid` and
    /// `SQL.greatest` render each engine's side.
    static var sql: SQL {
        let int = SQL.bigint
        let greatest = SQL.greatest
        let withoutRowid = SQL.withoutRowid
        let grp: SQL = """
            CASE type WHEN \(literal: NotificationType.like.rawValue) THEN post
                WHEN \(literal: NotificationType.comment.rawValue) THEN post
                WHEN \(literal: NotificationType.follow.rawValue) THEN created_at / 86400000 END
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
                    AND n.type = \(literal: NotificationType.like.rawValue));
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

    /// `notification.13-groups-on-insert` on both engines: the group upsert moves into the
    /// insert of the notification (an `AFTER INSERT` trigger on `recent_notifications`, for rows
    /// with a `grp`), and the recent table's members of a group are found through indexes it
    /// already keeps, so keeping groups costs a like two B-tree pages per commit (the group row
    /// and its position entry) instead of three, and one statement instead of two.
    ///
    /// - `recent_notifications_by_post` becomes (post, recipient, type, seq): still the index of
    ///   a post's notifications (deleting a post), and now also a like or comment group's members
    ///   newest first (their `grp` is the post key), which had their own index before.
    /// - `recent_notifications_follows` (recipient, grp, seq) for `follow` rows only: a follow
    ///   group's members.
    /// - `recent_notifications_by_group` is dropped. (The merged table keeps
    ///   `notifications_by_group`: merges write it a batch at a time, not a commit per like.)
    /// - The trigger adds the new row to its group as `NotificationWriter` did: count + 1, newest
    ///   member and position = the row's seq, its actor first among the 3 newest distinct actors,
    ///   a like's post type as `detail`. One upsert (ON CONFLICT DO UPDATE), so two replicas
    ///   adding to one group serialise on its row. SQLite compiles the trigger into the insert's
    ///   program; PostgreSQL runs it as a PL/pgSQL row trigger, one round trip fewer.
    ///
    /// Measured with `Benchmarks notification` (docs/loadtest.md): SQLite's WAL pages per like
    /// commit went from 7.3 to 6.3 (4.3 without groups).
    static func onInsertMigration(for id: String) -> Migration {
        Migration(id, onInsertSQL)
    }

    /// The migration's statements: SQLite's trigger runs the upsert itself, PostgreSQL's runs a
    /// PL/pgSQL function that does.
    static var onInsertSQL: SQL {
        let like = NotificationType.like.rawValue
        let follow = NotificationType.follow.rawValue
        let upsert = """
            INSERT INTO notification_groups(recipient, type, grp, count, latest_seq, latest_at, position, actor1, detail)
                VALUES (NEW.recipient, NEW.type, NEW.grp, 1, NEW.seq, NEW.created_at, NEW.seq, NEW.actor,
                    CASE WHEN NEW.type = \(like) THEN NEW.detail END)
                ON CONFLICT(recipient, type, grp) DO UPDATE SET count = notification_groups.count + 1,
                    latest_seq = excluded.latest_seq, latest_at = excluded.latest_at, position = excluded.position,
                    actor1 = excluded.actor1,
                    actor2 = CASE WHEN notification_groups.actor1 = excluded.actor1 THEN notification_groups.actor2
                        ELSE notification_groups.actor1 END,
                    actor3 = CASE WHEN notification_groups.actor1 = excluded.actor1
                        OR notification_groups.actor2 = excluded.actor1
                        THEN notification_groups.actor3 ELSE notification_groups.actor2 END,
                    detail = COALESCE(excluded.detail, notification_groups.detail);
            """
        let trigger = SQL.dialect(
            sqlite: """
                CREATE TRIGGER recent_notifications_grouped AFTER INSERT ON recent_notifications
                    WHEN NEW.grp IS NOT NULL BEGIN
                \(upsert)
                END;
                """,
            postgres: """
                CREATE FUNCTION notification_group_add() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                \(upsert)
                    RETURN NULL;
                END $$;
                CREATE TRIGGER recent_notifications_grouped AFTER INSERT ON recent_notifications
                    FOR EACH ROW WHEN (NEW.grp IS NOT NULL) EXECUTE FUNCTION notification_group_add();
                """)
        return """
            DROP INDEX recent_notifications_by_group;
            DROP INDEX recent_notifications_by_post;
            CREATE INDEX recent_notifications_by_post ON recent_notifications(post, recipient, type, seq)
                WHERE post IS NOT NULL;
            CREATE INDEX recent_notifications_follows ON recent_notifications(recipient, grp, seq)
                WHERE type = \(literal: follow);
            \(trigger)
            """
    }
}
