/// NotificationService's schema migrations, applied in order by `PRAGMA user_version`.
///
/// - `users`: the replica of AuthService's identities (`id`, lower-case `username`, `version`).
/// - `follows`: follow edges; `key` is the integer cursor of the follower/following lists
///   (newest edge first), `notify_posts` 0/1.
/// - `follow_counts`: per-user follower/following counters, changed in the same transaction as
///   the edge, so they always equal the number of edges.
/// - `notifications`: one row per notification; `seq` strictly increasing per recipient;
///   `dedup` unique key `(recipient_id, actor_id, type, object_id)` so a repeated action
///   (unfollow + follow, unlike + like, a replayed event) never makes a second one.
/// - `recipients`: per-recipient head seq (the counter behind `seq`) and read mark.
/// - Migration 2 indexes `notifyPosts` edges by (followee, follower) for the fan-out.
enum Schema {
    static let migrations: [String] = [
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
        """,
        // The new-post fan-out walks a followee's notifyPosts followers in follower order.
        "CREATE INDEX follows_notify_posts_by_follower ON follows(followee_id, follower_id) WHERE notify_posts = 1",
    ]
}
