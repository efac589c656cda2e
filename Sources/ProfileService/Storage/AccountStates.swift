import BackendKit
import Messages
import Storage
import Wire

/// ProfileService's copy of account states (API.md "Account lifecycle and moderation";
/// migration `profile.8-account-lifecycle`):
///
/// - `account_states(user_id, state, version)`: the accounts that are or were not active, with
///   the version of the state AuthService gave them (`Auth.AccountStateChanged`). A suspended or
///   deleting account's header, posts, comments, likes, tags and media are 404 (or left out of
///   lists) to everyone but itself. `erased` is this service's own last state: the account's data
///   is gone, and the row stays (an opaque id, nothing else) so that an event that arrives late
///   about the account is ignored instead of bringing something of it back.
/// - `erasures(user_id, started_ms)`: accounts whose data `AccountEraser` is erasing, and
///   `erasure_media(user_id, media_id)`: their uploads whose files are still to be removed.
/// - indexes of likes and comments by their author, which the erasure walks.
///
/// A state comes twice, from the gateway (`profile.apply_account_state`, before it answers the
/// client) and from AuthService's event; the newer version wins, so the order does not matter.
enum AccountStates {
    /// The state an account takes here once `AccountEraser` has finished with it.
    static let erased = "erased"

    static func migration(for id: String) -> Migration {
        Migration(
            id,
            """
            CREATE TABLE account_states(
                user_id TEXT PRIMARY KEY, state TEXT NOT NULL, version \(SQL.bigint) NOT NULL);
            CREATE TABLE erasures(user_id TEXT PRIMARY KEY, started_ms \(SQL.bigint) NOT NULL);
            CREATE TABLE erasure_media(user_id TEXT NOT NULL, media_id TEXT NOT NULL, PRIMARY KEY(user_id, media_id));
            CREATE INDEX likes_by_user ON likes(user_id, post_seq);
            CREATE INDEX comments_by_user ON comments(user_id, seq);
            """)
    }

    /// Applies a state if it is newer than the one held (an erased account keeps `erased`); a
    /// `deleting` state starts the erasure.
    /// - Returns: whether anything changed.
    @discardableResult
    static func apply(userId: String, state: Auth.AccountState, version: Int64, nowMs: Int64, in tx: Transaction) throws
        -> Bool
    {
        if let held = try tx.connection.queryOne(
            "SELECT state, version FROM account_states WHERE user_id = \(userId)\(SQL.forUpdate)")
        {
            if try held.string("state") == erased || held.int64("version") >= version { return false }
            try tx.query(
                "UPDATE account_states SET state = \(state.rawValue), version = \(version) WHERE user_id = \(userId)")
        } else {
            try tx.query(
                """
                INSERT INTO account_states(user_id, state, version) VALUES (\(userId), \(state.rawValue), \(version))
                """)
        }
        if state == .deleting {
            try tx.query(
                "INSERT INTO erasures(user_id, started_ms) VALUES (\(userId), \(nowMs)) ON CONFLICT (user_id) DO NOTHING")
        }
        return true
    }

    /// Whether `userId` is suspended, being deleted or erased.
    static func isHidden(_ userId: String, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM account_states WHERE user_id = \(userId) AND state <> 'active'")
    }

    /// Whether `userId`'s data was erased here.
    static func isErased(_ userId: String, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM account_states WHERE user_id = \(userId) AND state = \(erased)")
    }

    /// A condition on a user id `column`: its account is active (not suspended, deleting or erased).
    /// (`NOT IN`, not a correlated `NOT EXISTS`: `column` may be unqualified, and the subquery's
    /// own `user_id` must not capture it.)
    static func present(_ column: SQL) -> SQL {
        "\(column) NOT IN (SELECT user_id FROM account_states WHERE state <> 'active')"
    }

    /// Whether the media `id` is shown: some active account holds it, or nobody's row says whose
    /// it is. Suspended and deleted accounts' uploads are 404 (their files stay until erased).
    static func mediaShown(_ id: String, on c: DatabaseConnection) throws -> Bool {
        guard try c.exists("SELECT 1 FROM media WHERE id = \(id)") else { return true }
        return try c.exists("SELECT 1 FROM media m WHERE m.id = \(id) AND \(present("m.owner_id"))")
    }

    /// The handler of AuthService's state changes (beside the identity replica's).
    static func subscribe(_ subscriber: EventSubscriber, started: @escaping @Sendable () -> Void) {
        subscriber.on(Auth.AccountStateChanged.self) { event, tx in
            let e = event.body
            if try apply(userId: e.userId, state: e.state, version: e.version, nowMs: Timestamp.nowMs(), in: tx),
                e.state == .deleting
            {
                started()
            }
            return .applied
        }
    }
}
