import BackendKit
import Storage

/// ProfileService's tables (migrations, oldest first).
///
/// - `identities`: the replica of AuthService's accounts (`IdentityReplica`, emails kept: the
///   owner sees theirs).
/// - `profiles`: the fields ProfileService owns, one row per account (created when the account
///   enters the replica), and the `saveOriginalPosts` setting.
/// - `posts`: `seq` is a monotonic INTEGER key (AUTOINCREMENT: never reused) that orders the
///   grid and the tagged tab and makes their cursors; `id` is the public random id. Like and
///   comment counters change in the same transaction as the rows they count.
/// - `post_tags`, `likes`, `comments`: keyed by the post's `seq`; `likes.seq` and
///   `comments.seq` order and page those lists.
/// - `media`: one row per upload and uploader (the same bytes from two users: one file, two rows);
///   `attached` once a post or profile photo used it (fresh unattached uploads are kept for a grace
///   period). `posts.media_id` and `profiles.photo_media_id` are the references the collector
///   counts; `media_release` holds ids that may have lost their last reference, with when to look.
/// - `idempotency_keys`: per (user, `Idempotency-Key`), the request's fingerprint and first reply
///   (`IdempotencyStore`), `created_ms` ordering the purge.
/// - `reports`, `moderation_actions`, `moderation_effects`: reports and the moderation log
///   (`ReportSchema`).
enum ProfileSchema {
    /// The migrations from before they were named (`user_version` 1).
    static let legacy = [
        Migration.sqlite(
            "profile.1-users-posts",
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
            """)
    ]

    static let migrations =
        legacy + IdentityReplica.migrations + [
            // The identity columns move to the shared replica; a username two rows still share
            // (one of them renamed, its event not applied yet) is left unknown on both until
            // an event or a lookup brings the current one.
            Migration.sqlite(
                "profile.2-profiles-from-users",
                """
                INSERT INTO identities(id, username, email, version)
                SELECT id, CASE WHEN (SELECT COUNT(*) FROM users o WHERE o.username = u.username) > 1
                    THEN NULL ELSE username END, email, version
                FROM users u;
                CREATE TABLE profiles(
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL DEFAULT '',
                    bio TEXT NOT NULL DEFAULT '',
                    photo_url TEXT,
                    phone TEXT,
                    gender TEXT,
                    birth_date TEXT,
                    join_date TEXT NOT NULL,
                    save_original_posts INTEGER NOT NULL DEFAULT 0);
                INSERT INTO profiles(id, name, bio, photo_url, phone, gender, birth_date, join_date, save_original_posts)
                SELECT id, name, bio, photo_url, phone, gender, birth_date, join_date, save_original_posts FROM users;
                DROP TABLE users;
                """),
            // profile.2 left both rows of a shared username without it but kept their versions,
            // and the name's rightful owner may have that very version at AuthService: a lookup
            // or event of the same version is not newer, so the name never came back and the
            // account read as unknown (404) until its identity changed again. Version 0 lets the
            // next lookup or event of such a row restore it.
            Migration.sqlite(
                "profile.3-unnamed-identities-refreshable",
                "UPDATE identities SET version = 0 WHERE username IS NULL"),
            Migration.sqlite(
                "profile.4-media",
                """
                CREATE TABLE media(
                    id TEXT NOT NULL,
                    owner_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    width INTEGER NOT NULL,
                    height INTEGER NOT NULL,
                    duration_ms INTEGER,
                    created_at TEXT NOT NULL,
                    created_ms INTEGER NOT NULL,
                    attached INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY(id, owner_id));
                CREATE INDEX media_owner ON media(owner_id, created_ms);
                ALTER TABLE posts ADD COLUMN media_id TEXT;
                CREATE INDEX posts_media ON posts(media_id) WHERE media_id IS NOT NULL;
                ALTER TABLE profiles ADD COLUMN photo_media_id TEXT;
                CREATE INDEX profiles_photo_media ON profiles(photo_media_id) WHERE photo_media_id IS NOT NULL;
                CREATE TABLE media_release(
                    id TEXT PRIMARY KEY,
                    due_ms INTEGER NOT NULL);
                CREATE INDEX media_release_due ON media_release(due_ms);
                """),
            // PostgreSQL starts from the schema profile.1...4 built on SQLite (identities come
            // from the shared replica migration before this one).
            Migration(
                "profile.5-postgres-schema", sqlite: nil,
                postgres: """
                    CREATE TABLE profiles(
                        id TEXT PRIMARY KEY,
                        name TEXT NOT NULL DEFAULT '',
                        bio TEXT NOT NULL DEFAULT '',
                        photo_url TEXT,
                        phone TEXT,
                        gender TEXT,
                        birth_date TEXT,
                        join_date TEXT NOT NULL,
                        save_original_posts BIGINT NOT NULL DEFAULT 0,
                        photo_media_id TEXT);
                    CREATE INDEX profiles_photo_media ON profiles(photo_media_id) WHERE photo_media_id IS NOT NULL;
                    CREATE TABLE posts(
                        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        owner_id TEXT NOT NULL,
                        post_type TEXT NOT NULL,
                        media_url TEXT NOT NULL,
                        thumbnail_url TEXT NOT NULL,
                        caption TEXT NOT NULL,
                        created_at TEXT NOT NULL,
                        like_count BIGINT NOT NULL DEFAULT 0,
                        comment_count BIGINT NOT NULL DEFAULT 0,
                        media_id TEXT);
                    CREATE INDEX posts_owner ON posts(owner_id, seq);
                    CREATE INDEX posts_media ON posts(media_id) WHERE media_id IS NOT NULL;
                    CREATE TABLE post_tags(
                        post_seq BIGINT NOT NULL,
                        user_id TEXT NOT NULL,
                        position BIGINT NOT NULL,
                        PRIMARY KEY(post_seq, user_id));
                    CREATE INDEX post_tags_user ON post_tags(user_id, post_seq);
                    CREATE TABLE likes(
                        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        post_seq BIGINT NOT NULL,
                        user_id TEXT NOT NULL,
                        UNIQUE(post_seq, user_id));
                    CREATE TABLE comments(
                        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        post_seq BIGINT NOT NULL,
                        user_id TEXT NOT NULL,
                        text TEXT NOT NULL,
                        created_at TEXT NOT NULL);
                    CREATE INDEX comments_post ON comments(post_seq, seq);
                    CREATE TABLE media(
                        id TEXT NOT NULL,
                        owner_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        width BIGINT NOT NULL,
                        height BIGINT NOT NULL,
                        duration_ms BIGINT,
                        created_at TEXT NOT NULL,
                        created_ms BIGINT NOT NULL,
                        attached BIGINT NOT NULL DEFAULT 0,
                        PRIMARY KEY(id, owner_id));
                    CREATE INDEX media_owner ON media(owner_id, created_ms);
                    CREATE TABLE media_release(id TEXT PRIMARY KEY, due_ms BIGINT NOT NULL);
                    CREATE INDEX media_release_due ON media_release(due_ms);
                    """),
            // Idempotency-Key records (IdempotencyStore): the first reply of a user's key, written
            // in the transaction of the write it answers for; purged after 24 h.
            Migration(
                "profile.6-idempotency-keys",
                sqlite: """
                    CREATE TABLE idempotency_keys(
                        user_id TEXT NOT NULL,
                        idempotency_key TEXT NOT NULL,
                        fingerprint TEXT NOT NULL,
                        reply TEXT NOT NULL,
                        created_ms INTEGER NOT NULL,
                        PRIMARY KEY(user_id, idempotency_key));
                    CREATE INDEX idempotency_keys_created ON idempotency_keys(created_ms);
                    """,
                postgres: """
                    CREATE TABLE idempotency_keys(
                        user_id TEXT NOT NULL,
                        idempotency_key TEXT NOT NULL,
                        fingerprint TEXT NOT NULL,
                        reply TEXT NOT NULL,
                        created_ms BIGINT NOT NULL,
                        PRIMARY KEY(user_id, idempotency_key));
                    CREATE INDEX idempotency_keys_created ON idempotency_keys(created_ms);
                    """),
            Visibility.migration(for: "profile.7-privacy-and-safety"),
            AccountStates.migration(for: "profile.8-account-lifecycle"),
            ReportSchema.migration(for: "profile.9-reports-and-moderation"),
            EventRedaction.migration(for: "profile.10-event-redaction"),
        ]
}
