/// ProfileService's SQLite schema, applied in order by `PRAGMA user_version`.
///
/// - `users`: the identity replica (id, username, email, version from AuthService) plus the
///   service's own profile fields and the `saveOriginalPosts` setting.
/// - `posts`: `seq` is a monotonic INTEGER key (AUTOINCREMENT: never reused) that orders the
///   grid and the tagged tab and makes their cursors; `id` is the public random id. Like and
///   comment counters are kept in the same transaction as the rows they count.
/// - `post_tags`, `likes`, `comments`: keyed by the post's `seq`; `likes.seq` and
///   `comments.seq` order and page those lists.
enum Schema {
    static let migrations: [String] = [
        """
        CREATE TABLE users(
            id TEXT PRIMARY KEY,
            username TEXT NOT NULL,
            email TEXT NOT NULL,
            version INTEGER NOT NULL,
            name TEXT NOT NULL DEFAULT '',
            bio TEXT NOT NULL DEFAULT '',
            photo_url TEXT,
            phone TEXT,
            gender TEXT,
            birth_date TEXT,
            join_date TEXT NOT NULL,
            save_original_posts INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX users_username ON users(username);
        CREATE TABLE posts(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            owner_id TEXT NOT NULL,
            post_type TEXT NOT NULL,
            media_url TEXT NOT NULL,
            thumbnail_url TEXT NOT NULL,
            caption TEXT NOT NULL,
            created_at TEXT NOT NULL,
            like_count INTEGER NOT NULL DEFAULT 0,
            comment_count INTEGER NOT NULL DEFAULT 0);
        CREATE INDEX posts_owner ON posts(owner_id, seq);
        CREATE TABLE post_tags(
            post_seq INTEGER NOT NULL,
            user_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY(post_seq, user_id));
        CREATE INDEX post_tags_user ON post_tags(user_id, post_seq);
        CREATE TABLE likes(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            post_seq INTEGER NOT NULL,
            user_id TEXT NOT NULL,
            UNIQUE(post_seq, user_id));
        CREATE TABLE comments(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            post_seq INTEGER NOT NULL,
            user_id TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at TEXT NOT NULL);
        CREATE INDEX comments_post ON comments(post_seq, seq);
        """
    ]
}
