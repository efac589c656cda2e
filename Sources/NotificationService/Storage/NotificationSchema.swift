import BackendKit
import Storage

/// NotificationService's tables (migrations, oldest first). Users and posts are compact
/// integer keys (`identities.key`, `posts.key`) in every table and index; ids (32 hex digits)
/// appear once, in `identities` and `posts`.
///
/// - `identities`: the replica of AuthService's accounts (`IdentityReplica`, no emails); a user
///   met in an event before the replica knows them gets a row with a NULL username.
/// - `posts`: the posts notifications point to: id, thumbnail URL, and whether the post's
///   fan-out was started (once per post).
/// - `edges`: follow edges (follower → followee), `key` the integer cursor of the follower and
///   following lists (newest edge first), `notify_posts` 0/1, `created_at` Unix ms.
/// - `follow_counts`: per-user follower/following counters, changed in the same transaction as
///   the edge, so they always equal the number of edges.
/// - `notifications`: keyed by (recipient, seq), clustered (`WITHOUT ROWID`): a recipient's
///   notifications are neighbours, so a page or a head is one index range. `seq` increases
///   strictly per recipient and is never reused: the next is one above the largest of the
///   recipient's newest recent row, `recipients.merged_head` and `recipients.head_floor`. `type`: 1 like, 2 follow, 3 comment,
///   4 tag, 5 post. `once` is the object of an action that must not notify twice (the post of
///   a like or tag, a hash of the comment id, 0 for a follow; API.md: "repeating an action does
///   not make a second notification"), unique with (recipient, actor, type) where set; NULL
///   for a `post` (a fan-out starts once per post, `posts.fanned_out`), so the 100,000 rows of
///   a fan-out cost no second index.
///   `detail` is what the text needs besides the actor (`NotificationText`); `created_at` Unix ms.
/// - `recent_notifications`: the same rows, newly written. A fan-out inserts one row per
///   follower, each under a different recipient: in a table of millions of rows clustered by
///   recipient those land on as many different pages, and every page a transaction touches is
///   written again to the WAL, so the cost of a 100,000-follower fan-out grew with the table
///   (measured: 0.3 s on 0.7 M rows, 1.1 s on 5 M). New rows go to this small table instead,
///   and `RecentMerger` moves them into `notifications` in the background, in recipient order,
///   many fan-outs' rows together (one write per page for all of them). Every read is over
///   both (`all_notifications`); dedup keys are checked in both.
/// - `recipients`: per-recipient read mark, `head_floor`, the highest seq ever deleted by a
///   post's deletion (so a seq is not handed out twice when the newest rows go), and
///   `merged_head`, the highest seq ever merged into `notifications` (so the next seq is
///   found without a seek into the big table).
/// - Groups and the badge (`grp`, `notification_groups`, the singles indexes,
///   `push_suppressed`, `removed_unread`): see `NotificationGroupSchema`.
/// - Devices, push preferences and the push queue (`devices`, `push_preferences`,
///   `push_queue`): see `PushSchema`.
/// - `actor_profiles`: the public profile fields live notifications show their actor with:
///   see `ActorProfiles`.
/// - Account states, held notifications and the account jobs (`account_states`,
///   `held_notifications`, `held_groups`, `account_jobs`): see `AccountSchema`.
/// - `fanout_jobs`: new posts whose fan-out to `notifyPosts` followers is under way, with the
///   last follower key reached (`skip_notified`: a job carried over from the id-ordered
///   schema, which skips followers it already reached); `purge_jobs`: deleted posts whose notifications are being
///   removed (`JobWorker`).
enum NotificationSchema {
    /// The migrations from before they were named (`user_version` 1...2).
    static let legacy = [
        Migration.sqlite(
            "notification.1-graph-notifications",
            """
            CREATE TABLE users(
                id TEXT PRIMARY KEY,
                username TEXT NOT NULL,
                version INTEGER NOT NULL);
            CREATE INDEX users_username ON users(username);

            CREATE TABLE follows(
                key INTEGER PRIMARY KEY AUTOINCREMENT,
                follower_id TEXT NOT NULL,
                followee_id TEXT NOT NULL,
                notify_posts INTEGER NOT NULL,
                created_at TEXT NOT NULL,
                UNIQUE(follower_id, followee_id));
            CREATE INDEX follows_by_followee ON follows(followee_id, key);
            CREATE INDEX follows_by_follower ON follows(follower_id, key);
            CREATE INDEX follows_notify_posts ON follows(followee_id, key) WHERE notify_posts = 1;

            CREATE TABLE follow_counts(
                user_id TEXT PRIMARY KEY,
                followers INTEGER NOT NULL DEFAULT 0 CHECK (followers >= 0),
                following INTEGER NOT NULL DEFAULT 0 CHECK (following >= 0));

            CREATE TABLE notifications(
                key INTEGER PRIMARY KEY AUTOINCREMENT,
                recipient_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                type TEXT NOT NULL,
                text TEXT NOT NULL,
                created_at TEXT NOT NULL,
                actor_id TEXT NOT NULL,
                object_id TEXT NOT NULL,
                post_id TEXT,
                thumbnail_url TEXT,
                UNIQUE(recipient_id, seq),
                UNIQUE(recipient_id, actor_id, type, object_id));
            CREATE INDEX notifications_by_post ON notifications(post_id) WHERE post_id IS NOT NULL;

            CREATE TABLE recipients(
                recipient_id TEXT PRIMARY KEY,
                head_seq INTEGER NOT NULL,
                read_seq INTEGER NOT NULL DEFAULT 0);
            """),
        // The new-post fan-out walks a followee's notifyPosts followers in follower order.
        Migration.sqlite(
            "notification.2-fanout-order",
            "CREATE INDEX follows_notify_posts_by_follower ON follows(followee_id, follower_id) WHERE notify_posts = 1"),
    ]

    static let migrations =
        legacy + IdentityReplica.migrations + [
            Migration.sqlite(
                "notification.3-identities-from-users",
                """
                INSERT INTO identities(id, username, version)
                SELECT id, CASE WHEN (SELECT COUNT(*) FROM users o WHERE o.username = u.username) > 1
                    THEN NULL ELSE username END, version
                FROM users u;
                DROP TABLE users;
                """),
            // Texts are rendered when shown, from the actor's current username; what a stored
            // text said besides the name moves to `detail`.
            Migration.sqlite(
                "notification.4-detail-instead-of-text",
                """
                ALTER TABLE notifications ADD COLUMN detail TEXT;
                UPDATE notifications SET detail = CASE
                    WHEN type = 'like' THEN CASE WHEN text LIKE '% liked your video.' THEN 'video' ELSE 'photo' END
                    WHEN type = 'comment' THEN substr(text, instr(text, ' commented: ') + 12)
                    ELSE NULL END;
                ALTER TABLE notifications DROP COLUMN text;
                """),
            Migration.sqlite(
                "notification.5-fanout-jobs",
                """
                CREATE TABLE fanout_jobs(
                    post_id TEXT PRIMARY KEY,
                    owner_id TEXT NOT NULL,
                    thumbnail_url TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    after_follower TEXT NOT NULL DEFAULT '');
                """),
            // Compact keys instead of 32-hex TEXT ids in every row and index, notifications
            // clustered by (recipient, seq), no per-recipient head row to upsert per insert.
            Migration.sqlite(
                "notification.6-compact-keys",
                """
                INSERT OR IGNORE INTO identities(id, username, version)
                    SELECT follower_id, NULL, 0 FROM follows UNION SELECT followee_id, NULL, 0 FROM follows
                    UNION SELECT recipient_id, NULL, 0 FROM notifications UNION SELECT actor_id, NULL, 0 FROM notifications
                    UNION SELECT user_id, NULL, 0 FROM follow_counts UNION SELECT recipient_id, NULL, 0 FROM recipients
                    UNION SELECT owner_id, NULL, 0 FROM fanout_jobs;

                CREATE TABLE posts(
                    key INTEGER PRIMARY KEY,
                    id TEXT NOT NULL UNIQUE,
                    thumbnail_url TEXT NOT NULL,
                    fanned_out INTEGER NOT NULL DEFAULT 0);
                INSERT INTO posts(id, thumbnail_url, fanned_out)
                    SELECT post_id, MAX(thumbnail_url), MAX(fanned_out) FROM (
                        SELECT post_id, COALESCE(thumbnail_url, '') AS thumbnail_url, type = 'post' AS fanned_out
                        FROM notifications WHERE post_id IS NOT NULL
                        UNION ALL SELECT post_id, thumbnail_url, 1 FROM fanout_jobs)
                    GROUP BY post_id;

                CREATE TABLE edges(
                    key INTEGER PRIMARY KEY,
                    follower INTEGER NOT NULL,
                    followee INTEGER NOT NULL,
                    notify_posts INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    UNIQUE(follower, followee));
                INSERT INTO edges(key, follower, followee, notify_posts, created_at)
                    SELECT f.key, a.key, b.key, f.notify_posts,
                        CAST(ROUND((julianday(f.created_at) - 2440587.5) * 86400000) AS INTEGER)
                    FROM follows f JOIN identities a ON a.id = f.follower_id JOIN identities b ON b.id = f.followee_id;
                DROP TABLE follows;
                CREATE INDEX edges_by_followee ON edges(followee, key);
                CREATE INDEX edges_by_follower ON edges(follower, key);
                CREATE INDEX edges_notify_posts ON edges(followee, follower) WHERE notify_posts = 1;

                CREATE TABLE counts(
                    user INTEGER PRIMARY KEY,
                    followers INTEGER NOT NULL DEFAULT 0 CHECK (followers >= 0),
                    following INTEGER NOT NULL DEFAULT 0 CHECK (following >= 0));
                INSERT INTO counts(user, followers, following)
                    SELECT i.key, c.followers, c.following FROM follow_counts c JOIN identities i ON i.id = c.user_id;
                DROP TABLE follow_counts;
                ALTER TABLE counts RENAME TO follow_counts;

                CREATE TABLE notes(
                    recipient INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    type INTEGER NOT NULL,
                    actor INTEGER NOT NULL,
                    post INTEGER,
                    once INTEGER,
                    detail TEXT,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY(recipient, seq)) WITHOUT ROWID;
                INSERT INTO notes(recipient, seq, type, actor, post, once, detail, created_at)
                    SELECT r.key, n.seq,
                        CASE n.type WHEN 'like' THEN 1 WHEN 'follow' THEN 2 WHEN 'comment' THEN 3 WHEN 'tag' THEN 4 ELSE 5 END,
                        a.key, p.key,
                        CASE n.type WHEN 'like' THEN p.key WHEN 'tag' THEN p.key WHEN 'follow' THEN 0 END,
                        n.detail, CAST(ROUND((julianday(n.created_at) - 2440587.5) * 86400000) AS INTEGER)
                    FROM notifications n JOIN identities r ON r.id = n.recipient_id JOIN identities a ON a.id = n.actor_id
                    LEFT JOIN posts p ON p.id = n.post_id;

                CREATE TABLE readers(
                    recipient INTEGER PRIMARY KEY,
                    read_seq INTEGER NOT NULL DEFAULT 0,
                    head_floor INTEGER NOT NULL DEFAULT 0);
                -- Rows may have been deleted with their post: the old head keeps their seqs used.
                INSERT INTO readers(recipient, read_seq, head_floor)
                    SELECT i.key, r.read_seq, r.head_seq FROM recipients r JOIN identities i ON i.id = r.recipient_id;
                DROP TABLE recipients;
                ALTER TABLE readers RENAME TO recipients;
                DROP TABLE notifications;
                ALTER TABLE notes RENAME TO notifications;
                CREATE INDEX notifications_by_post ON notifications(post) WHERE post IS NOT NULL;
                CREATE UNIQUE INDEX notifications_once ON notifications(recipient, actor, type, once) WHERE once IS NOT NULL;

                CREATE TABLE jobs(
                    post INTEGER PRIMARY KEY,
                    owner INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    after_follower INTEGER NOT NULL DEFAULT 0,
                    skip_notified INTEGER NOT NULL DEFAULT 0);
                -- A fan-out under way walked followers in id order; it restarts in key order,
                -- skipping the followers it already reached.
                INSERT INTO jobs(post, owner, created_at, after_follower, skip_notified)
                    SELECT p.key, o.key, CAST(ROUND((julianday(j.created_at) - 2440587.5) * 86400000) AS INTEGER), 0,
                        CASE WHEN j.after_follower = '' THEN 0 ELSE 1 END
                    FROM fanout_jobs j JOIN posts p ON p.id = j.post_id JOIN identities o ON o.id = j.owner_id;
                DROP TABLE fanout_jobs;
                ALTER TABLE jobs RENAME TO fanout_jobs;
                CREATE TABLE purge_jobs(post INTEGER PRIMARY KEY);
                """),
            // New notifications go to a small table first and are merged into the big one in
            // the background (`RecentMerger`), so a fan-out's cost does not grow with the
            // database (see `NotificationSchema`).
            Migration.sqlite(
                "notification.7-recent-notifications",
                """
                CREATE TABLE recent_notifications(
                    recipient INTEGER NOT NULL,
                    seq INTEGER NOT NULL,
                    type INTEGER NOT NULL,
                    actor INTEGER NOT NULL,
                    post INTEGER,
                    once INTEGER,
                    detail TEXT,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY(recipient, seq)) WITHOUT ROWID;
                CREATE INDEX recent_notifications_by_post ON recent_notifications(post) WHERE post IS NOT NULL;
                CREATE UNIQUE INDEX recent_notifications_once ON recent_notifications(recipient, actor, type, once)
                    WHERE once IS NOT NULL;
                CREATE VIEW all_notifications AS
                    SELECT * FROM notifications UNION ALL SELECT * FROM recent_notifications;
                """),
            // The newest seq merged into the big table, per recipient (`RecentMerger` keeps it),
            // so a new row's seq needs no seek into the big table (`NotificationWriter.head`).
            Migration.sqlite(
                "notification.8-merged-head",
                """
                ALTER TABLE recipients ADD COLUMN merged_head INTEGER NOT NULL DEFAULT 0;
                INSERT INTO recipients(recipient, merged_head)
                    SELECT recipient, MAX(seq) FROM notifications WHERE true GROUP BY recipient
                    ON CONFLICT(recipient) DO UPDATE SET merged_head = excluded.merged_head;
                """),
            // The service has one name: its events were `graph.*` and are `notification.*`
            // (`notification.follow.changed`, `notification.follows.imported`), so the stored
            // outbox replays under the new names. The outbox keeps the type in its own column
            // (the envelope is built around `body` when read, `Outbox.envelope`), so the type
            // column is all there is to rewrite.
            Migration.sqlite(
                "notification.9-event-names",
                """
                UPDATE outbox SET type = 'notification.' || substr(type, length('graph.') + 1)
                    WHERE type LIKE 'graph.%';
                """),
            // Notification ids are opaque (`NotificationIds`): the secret they are enciphered
            // with, made once per database (SQLite's randomblob: its CSPRNG, seeded by the OS).
            Migration.sqlite(
                "notification.10-id-secret",
                """
                CREATE TABLE secrets(name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
                INSERT INTO secrets(name, value) VALUES ('\(unescaped: NotificationIds.secretName)', randomblob(32));
                """),
            // PostgreSQL starts from the schema notification.1...10 built on SQLite. No table is
            // clustered there: the (recipient, seq) primary keys are B-tree indexes a page or a
            // head reads as one range, and `recent_notifications` keeps a fan-out's inserts to a
            // small table as on SQLite. The job tables order by an identity column where SQLite
            // uses its rowid. The id secret: 32 bytes from two `gen_random_uuid()` (PostgreSQL's
            // pg_strong_random, the OS CSPRNG; 244 random bits, the UUID version bits fixed).
            Migration(
                "notification.11-postgres-schema", sqlite: nil,
                postgres: """
                    CREATE TABLE posts(
                        key BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        thumbnail_url TEXT NOT NULL,
                        fanned_out BIGINT NOT NULL DEFAULT 0);
                    CREATE TABLE edges(
                        key BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                        follower BIGINT NOT NULL,
                        followee BIGINT NOT NULL,
                        notify_posts BIGINT NOT NULL,
                        created_at BIGINT NOT NULL,
                        UNIQUE(follower, followee));
                    CREATE INDEX edges_by_followee ON edges(followee, key);
                    CREATE INDEX edges_by_follower ON edges(follower, key);
                    CREATE INDEX edges_notify_posts ON edges(followee, follower) WHERE notify_posts = 1;
                    CREATE TABLE follow_counts(
                        "user" BIGINT PRIMARY KEY,
                        followers BIGINT NOT NULL DEFAULT 0 CHECK (followers >= 0),
                        following BIGINT NOT NULL DEFAULT 0 CHECK (following >= 0));
                    CREATE TABLE notifications(
                        recipient BIGINT NOT NULL,
                        seq BIGINT NOT NULL,
                        type BIGINT NOT NULL,
                        actor BIGINT NOT NULL,
                        post BIGINT,
                        once BIGINT,
                        detail TEXT,
                        created_at BIGINT NOT NULL,
                        PRIMARY KEY(recipient, seq));
                    CREATE INDEX notifications_by_post ON notifications(post) WHERE post IS NOT NULL;
                    CREATE UNIQUE INDEX notifications_once ON notifications(recipient, actor, type, once)
                        WHERE once IS NOT NULL;
                    CREATE TABLE recent_notifications(
                        recipient BIGINT NOT NULL,
                        seq BIGINT NOT NULL,
                        type BIGINT NOT NULL,
                        actor BIGINT NOT NULL,
                        post BIGINT,
                        once BIGINT,
                        detail TEXT,
                        created_at BIGINT NOT NULL,
                        PRIMARY KEY(recipient, seq));
                    CREATE INDEX recent_notifications_by_post ON recent_notifications(post) WHERE post IS NOT NULL;
                    CREATE UNIQUE INDEX recent_notifications_once ON recent_notifications(recipient, actor, type, once)
                        WHERE once IS NOT NULL;
                    CREATE VIEW all_notifications AS
                        SELECT * FROM notifications UNION ALL SELECT * FROM recent_notifications;
                    CREATE TABLE recipients(
                        recipient BIGINT PRIMARY KEY,
                        read_seq BIGINT NOT NULL DEFAULT 0,
                        head_floor BIGINT NOT NULL DEFAULT 0,
                        merged_head BIGINT NOT NULL DEFAULT 0);
                    CREATE TABLE fanout_jobs(
                        post BIGINT PRIMARY KEY,
                        owner BIGINT NOT NULL,
                        created_at BIGINT NOT NULL,
                        after_follower BIGINT NOT NULL DEFAULT 0,
                        skip_notified BIGINT NOT NULL DEFAULT 0,
                        position BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE);
                    CREATE TABLE purge_jobs(post BIGINT PRIMARY KEY, position BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE);
                    CREATE TABLE secrets(name TEXT PRIMARY KEY, value BYTEA NOT NULL);
                    INSERT INTO secrets(name, value) VALUES ('\(unescaped: NotificationIds.secretName)',
                        decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
                    """),
            NotificationGroupSchema.migration(for: "notification.12-groups-and-badge"),
            NotificationGroupSchema.onInsertMigration(for: "notification.13-groups-on-insert"),
            PushSchema.migration(for: "notification.14-push"),
            ActorProfiles.migration(for: "notification.15-actor-profiles"),
            // An undone action's dedup key no longer stops the redo's notification (API.md: undo
            // then redo leaves exactly one); it stops only a second push (`NotificationWriter`).
            Migration("notification.16-push-suppressed", "ALTER TABLE notification_suppressed RENAME TO push_suppressed"),
            PushSchema.deviceTrustMigration(for: "notification.17-device-trust"),
            SafetySchema.migration(for: "notification.18-privacy-and-safety"),
            AccountSchema.migration(for: "notification.19-account-lifecycle"),
            ReportNotificationSchema.migration(for: "notification.20-report-resolved-singles"),
        ]
}
