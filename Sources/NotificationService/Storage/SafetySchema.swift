import Storage

/// The tables of privacy and safety (migration `notification.18-privacy-and-safety`, API.md
/// "Privacy and safety"), the same on both engines; users are `identities.key`:
///
/// - `blocks(blocker, blocked, created_at, key)`: one row per block; `key` orders the blocker's
///   list (`GET /v1/me/blocks`, newest first). `blocks_by_blocked` finds who blocks a user.
/// - `mutes(muter, muted, created_at, key)`: the same for mutes.
/// - `follow_requests(requester, target, notify_posts, created_at, key)`: pending requests to
///   follow a private account, with the `notifyPosts` the follow gets when accepted;
///   `follow_requests_by_target` serves the target's list.
/// - `private_accounts("user")`: the accounts whose profile is private, ProfileService's flag as
///   its `profile.user.changed` events carry it (`ActorProfiles`).
/// - `notifications_singles`, `recent_notifications_singles` again, now with the two new types
///   that are never grouped (`follow_request` 6, `follow_accepted` 7) beside `tag` and `post`.
enum SafetySchema {
    static func migration(for id: String) -> Migration {
        let int = SQL.bigint
        let key = SQL.generatedKey
        return Migration(
            id,
            """
            CREATE TABLE blocks(
                key \(key),
                blocker \(int) NOT NULL,
                blocked \(int) NOT NULL,
                created_at \(int) NOT NULL,
                UNIQUE(blocker, blocked));
            CREATE INDEX blocks_by_blocker ON blocks(blocker, key);
            CREATE INDEX blocks_by_blocked ON blocks(blocked, blocker);
            CREATE TABLE mutes(
                key \(key),
                muter \(int) NOT NULL,
                muted \(int) NOT NULL,
                created_at \(int) NOT NULL,
                UNIQUE(muter, muted));
            CREATE INDEX mutes_by_muter ON mutes(muter, key);
            CREATE TABLE follow_requests(
                key \(key),
                requester \(int) NOT NULL,
                target \(int) NOT NULL,
                notify_posts \(int) NOT NULL,
                created_at \(int) NOT NULL,
                UNIQUE(requester, target));
            CREATE INDEX follow_requests_by_target ON follow_requests(target, key);
            CREATE TABLE private_accounts("user" \(int) PRIMARY KEY);
            DROP INDEX notifications_singles;
            DROP INDEX recent_notifications_singles;
            CREATE INDEX notifications_singles ON notifications(recipient, seq) WHERE type IN (4, 5, 6, 7);
            CREATE INDEX recent_notifications_singles ON recent_notifications(recipient, seq) WHERE type IN (4, 5, 6, 7);
            """)
    }
}
