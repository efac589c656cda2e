import Storage

/// The tables of push delivery (migration `notification.14-push`), the same on both engines
/// (SQLite's `INTEGER PRIMARY KEY`, PostgreSQL's identity columns):
///
/// - `devices`: the APNs device tokens users registered (API.md "Devices and push"). `key` is the
///   compact integer the queue refers to; `id` (32 random hex digits) is what clients see;
///   `user_key` is `identities.key`; `token` (lowercase hex) is unique: one owner per token, and
///   registering it again moves it to the caller (`DeviceStore.register`); `environment` is
///   `sandbox` or `production`; `session_id` the AuthService session it was registered with
///   (logout removes the session's devices); `created_at` Unix ms of the latest registration
///   (an APNs 410's `timestamp` older than it keeps the device).
/// - `push_preferences`: per user, `muted` is a bit set of the notification types whose pushes are
///   off (bit `1 << NotificationType.rawValue`); no row: every type on.
/// - `push_queue`: one row per (notification, device) still to be sent, written in the
///   transaction that writes the notification (`PushQueueStore.enqueue`). It keeps what the
///   payload needs: `recipient` and `seq` (the notification's id is derived from them), `type`,
///   `text` (rendered when queued), `collapse_id`; `round`, its place in the recipient's own
///   queue when queued (its seq minus the seq of the recipient's oldest queued push: 0 for a
///   recipient with nothing waiting), by which senders claim, so a burst for one recipient
///   does not hold back another's first push; `available_at` (Unix ms: not before),
///   `claimed_until` / `claimed_by` (a sender's lease, `PushSender`), `attempts`, `created_at`
///   (Unix ms: the push expires a day after). `push_queue_by_round` (round, id) is the claim's
///   order, `push_queue_by_recipient` (recipient, seq) finds a recipient's oldest queued seq,
///   `push_queue_by_device` serves the deletes of a device.
enum PushSchema {
    /// `notification.17-device-trust` on both engines (issue 37): a device belongs to the app
    /// installation that registered it and to a session that is still open.
    ///
    /// - `devices.installation_id`: the app installation's UUID (NULL for devices registered
    ///   before it: such a token moves to nobody).
    /// - `device_sessions(session_id, revoked_until)`: the AuthService sessions devices were
    ///   registered with, and those that ended (its `auth.session.revoked`; `revoked_until`:
    ///   when the session would have expired, Unix ms, NULL while it is open), kept until then.
    ///   A registration and a revocation of one session both upsert its row first, so the one
    ///   that comes second waits for the first to commit and sees it (on PostgreSQL the row
    ///   lock; on SQLite the one writer): a device registered with a session that ended is
    ///   refused, and one registered just before the revocation is removed by it
    ///   (`DeviceStore.register`, `DeviceStore.revoke`).
    /// - `device_moves(user_key, at)`: when a token moved to the user from another account (Unix
    ///   ms), for the hourly limit.
    static func deviceTrustMigration(for id: String) -> Migration {
        Migration(
            id,
            """
            ALTER TABLE devices ADD COLUMN installation_id TEXT;
            CREATE TABLE device_sessions(session_id TEXT PRIMARY KEY, revoked_until \(SQL.bigint));
            CREATE INDEX device_sessions_revoked ON device_sessions(revoked_until) WHERE revoked_until IS NOT NULL;
            CREATE TABLE device_moves(user_key \(SQL.bigint) NOT NULL, at \(SQL.bigint) NOT NULL);
            CREATE INDEX device_moves_by_user ON device_moves(user_key, at);
            """)
    }

    /// `notification.14-push` on both engines.
    static func migration(for id: String) -> Migration {
        Migration(id, sql)
    }

    /// The migration's statements, written once (`SQL.bigint`, `SQL.generatedKey`).
    static var sql: SQL {
        let int = SQL.bigint
        let key = SQL.generatedKey
        return """
            CREATE TABLE devices(
                key \(key),
                id TEXT NOT NULL UNIQUE,
                user_key \(int) NOT NULL,
                token TEXT NOT NULL UNIQUE,
                environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
                session_id TEXT NOT NULL,
                created_at \(int) NOT NULL);
            CREATE INDEX devices_by_user ON devices(user_key, key);
            CREATE INDEX devices_by_session ON devices(session_id);

            CREATE TABLE push_preferences(
                user_key \(int) PRIMARY KEY,
                muted \(int) NOT NULL DEFAULT 0);

            CREATE TABLE push_queue(
                id \(key),
                device \(int) NOT NULL,
                recipient \(int) NOT NULL,
                seq \(int) NOT NULL,
                type \(int) NOT NULL,
                text TEXT NOT NULL,
                collapse_id TEXT,
                available_at \(int) NOT NULL,
                claimed_until \(int) NOT NULL DEFAULT 0,
                claimed_by TEXT,
                attempts \(int) NOT NULL DEFAULT 0,
                round \(int) NOT NULL,
                created_at \(int) NOT NULL);
            CREATE INDEX push_queue_by_round ON push_queue(round, id);
            CREATE INDEX push_queue_by_recipient ON push_queue(recipient, seq);
            CREATE INDEX push_queue_by_device ON push_queue(device);
            """
    }
}
