import Storage

/// The tables of the account lifecycle (migration `notification.19-account-lifecycle`, API.md
/// "Account lifecycle and moderation"), the same on both engines;
/// users are `identities.key`:
///
/// - `account_states(user_key, user_id, state, version, changed_at)`: the state of each account
///   whose state ever changed (no row: active), by key and by AuthService's id. `state` is
///   `AccountState` (0 active, 1 suspended, 2 deleting, 3 erased); `version` AuthService's
///   version of it (a state applies only when newer); `changed_at` Unix ms. An erased account
///   keeps its row for good: the tombstone that makes late events about it change nothing (its
///   `identities` row is deleted; `Keys.user` answers the tombstone's key for its id).
/// - `account_jobs(user_key, phase, last_key, turn, started_at)`: accounts whose notifications are
///   being moved aside, back, or erased (`AccountWorker`): `phase` and `last_key` are the erasure's
///   place (`AccountErasure.Phase`, a key cursor), `turn` the batches taken (the worker takes the
///   job with the fewest, so one large erasure does not hold up another account's), `started_at`
///   Unix ms.
/// - `held_notifications`: the notifications of a suspended user to others, moved aside with a
///   removal's corrections (`AccountHold`), restored with the same seq and `created_at` when the
///   suspension is lifted; the columns of `notifications`. `held_notifications_by_actor` finds a
///   user's, `held_notifications_by_post` a deleted post's.
/// - `held_groups(actor, recipient, type, grp, position)`: the position of a group the hold of
///   `actor` emptied (and so deleted), so that its restore puts the group back where it was.
/// - `recent_notifications_by_actor`, `notifications_by_actor`: a user's notifications to others,
///   partial indexes that leave out `post` rows (type 5): a fan-out writes none of their entries
///   (its rows are found through `posts.owner` and the post indexes instead).
/// - `posts.owner`: the post's author (NULL for a post seen before this migration whose owner no
///   notification names), `posts_by_owner`.
/// - `mutes_by_muted`, `push_suppressed_by_actor`: the rows an erasure finds from the other side.
/// - `device_sessions.user_key`: whose session (NULL for one recorded before this migration and
///   no device names), `device_sessions_by_user`.
/// - A trigger keeps an erased account out of `identities` whatever the replica applies later (a
///   late `auth.user.changed`, a lookup answered before AuthService deleted the account): its
///   insert is skipped.
enum AccountSchema {
    static func migration(for id: String) -> Migration {
        let int = SQL.bigint
        let withoutRowid = SQL.withoutRowid
        let post = NotificationType.post.rawValue
        let erased = AccountState.erased.rawValue
        let trigger = SQL.dialect(
            sqlite: """
                CREATE TRIGGER identities_not_erased BEFORE INSERT ON identities
                    WHEN EXISTS (SELECT 1 FROM account_states s WHERE s.user_id = NEW.id AND s.state = \(erased))
                BEGIN
                    SELECT RAISE(IGNORE);
                END;
                """,
            postgres: """
                CREATE FUNCTION identities_not_erased() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF EXISTS (SELECT 1 FROM account_states s WHERE s.user_id = NEW.id AND s.state = \(erased)) THEN
                        RETURN NULL;
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER identities_not_erased BEFORE INSERT ON identities
                    FOR EACH ROW EXECUTE FUNCTION identities_not_erased();
                """)
        return Migration(
            id,
            """
            CREATE TABLE account_states(
                user_key \(int) PRIMARY KEY,
                user_id TEXT NOT NULL,
                state \(int) NOT NULL,
                version \(int) NOT NULL,
                changed_at \(int) NOT NULL);
            CREATE UNIQUE INDEX account_states_by_id ON account_states(user_id);
            CREATE TABLE account_jobs(
                user_key \(int) PRIMARY KEY,
                phase \(int) NOT NULL DEFAULT 0,
                last_key \(int) NOT NULL DEFAULT 0,
                turn \(int) NOT NULL DEFAULT 0,
                started_at \(int) NOT NULL);
            CREATE INDEX account_jobs_by_turn ON account_jobs(turn, user_key);
            CREATE TABLE held_notifications(
                recipient \(int) NOT NULL,
                seq \(int) NOT NULL,
                type \(int) NOT NULL,
                actor \(int) NOT NULL,
                post \(int),
                once \(int),
                detail TEXT,
                created_at \(int) NOT NULL,
                grp \(int),
                PRIMARY KEY(recipient, seq))\(withoutRowid);
            CREATE INDEX held_notifications_by_actor ON held_notifications(actor, recipient, seq);
            CREATE INDEX held_notifications_by_post ON held_notifications(post) WHERE post IS NOT NULL;
            CREATE TABLE held_groups(
                actor \(int) NOT NULL,
                recipient \(int) NOT NULL,
                type \(int) NOT NULL,
                grp \(int) NOT NULL,
                position \(int) NOT NULL,
                PRIMARY KEY(actor, recipient, type, grp))\(withoutRowid);
            CREATE INDEX held_groups_by_recipient ON held_groups(recipient);
            CREATE INDEX recent_notifications_by_actor ON recent_notifications(actor) WHERE type <> \(literal: post);
            CREATE INDEX notifications_by_actor ON notifications(actor) WHERE type <> \(literal: post);
            ALTER TABLE posts ADD COLUMN owner \(int);
            UPDATE posts SET owner = COALESCE(
                (SELECT n.actor FROM recent_notifications n WHERE n.post = posts.key AND n.type IN (4, 5) LIMIT 1),
                (SELECT n.actor FROM notifications n WHERE n.post = posts.key AND n.type IN (4, 5) LIMIT 1),
                (SELECT n.recipient FROM recent_notifications n WHERE n.post = posts.key AND n.type IN (1, 3) LIMIT 1),
                (SELECT n.recipient FROM notifications n WHERE n.post = posts.key AND n.type IN (1, 3) LIMIT 1),
                (SELECT j.owner FROM fanout_jobs j WHERE j.post = posts.key));
            CREATE INDEX posts_by_owner ON posts(owner) WHERE owner IS NOT NULL;
            CREATE INDEX mutes_by_muted ON mutes(muted, muter);
            CREATE INDEX push_suppressed_by_actor ON push_suppressed(actor);
            ALTER TABLE device_sessions ADD COLUMN user_key \(int);
            UPDATE device_sessions SET user_key = (SELECT MIN(d.user_key) FROM devices d
                WHERE d.session_id = device_sessions.session_id);
            CREATE INDEX device_sessions_by_user ON device_sessions(user_key) WHERE user_key IS NOT NULL;
            \(trigger)
            """)
    }
}
