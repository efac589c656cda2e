import Shared

/// NotificationService's tables (migrations, oldest first).
///
/// - `identities`: the replica of AuthService's accounts (`IdentityReplica`, no emails).
/// - `follows`: follow edges; `key` is the integer cursor of the follower/following lists
///   (newest edge first), `notify_posts` 0/1.
/// - `follow_counts`: per-user follower/following counters, changed in the same transaction as
///   the edge, so they always equal the number of edges.
/// - `notifications`: one row per notification; `seq` strictly increasing per recipient;
///   unique `(recipient_id, actor_id, type, object_id)` so a repeated action (unfollow +
///   follow, unlike + like, a replayed event) never makes a second one; `detail` is what the
///   text needs besides the actor (`NotificationText`).
/// - `recipients`: per-recipient head seq (the counter behind `seq`) and read mark.
/// - `fanout_jobs`: new posts whose fan-out to `notifyPosts` followers is under way, with the
///   last follower reached (`FanOutWorker`).
enum NotificationSchema {
    /// The migrations from before they were named (`user_version` 1...2).
    static let legacy = [
        Migration(
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
        Migration(
            "notification.2-fanout-order",
            "CREATE INDEX follows_notify_posts_by_follower ON follows(followee_id, follower_id) WHERE notify_posts = 1"),
    ]

    static let migrations =
        legacy + IdentityReplica.migrations + [
            Migration(
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
            Migration(
                "notification.4-detail-instead-of-text",
                """
                ALTER TABLE notifications ADD COLUMN detail TEXT;
                UPDATE notifications SET detail = CASE
                    WHEN type = 'like' THEN CASE WHEN text LIKE '% liked your video.' THEN 'video' ELSE 'photo' END
                    WHEN type = 'comment' THEN substr(text, instr(text, ' commented: ') + 12)
                    ELSE NULL END;
                ALTER TABLE notifications DROP COLUMN text;
                """),
            Migration(
                "notification.5-fanout-jobs",
                """
                CREATE TABLE fanout_jobs(
                    post_id TEXT PRIMARY KEY,
                    owner_id TEXT NOT NULL,
                    thumbnail_url TEXT NOT NULL,
                    created_at TEXT NOT NULL,
                    after_follower TEXT NOT NULL DEFAULT '');
                """),
        ]
}
