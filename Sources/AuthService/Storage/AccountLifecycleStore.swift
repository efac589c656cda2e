import Messages
import Storage
import Wire

/// An account's password hash and lifecycle state, read before a password check.
struct AccountCredentials: Sendable, RowDecodable {
    var identity: Identity
    /// libsodium's argon2id PHC string.
    var passwordHash: String
    var state: Auth.AccountState
    var stateVersion: Int64
    /// Unix ms, while the account is being deleted.
    var deletionStartedAt: Int64?

    init(row: Row) throws {
        identity = try Identity(row: row)
        passwordHash = try row.string("password_hash")
        let stateName = try row.string("state")
        guard let state = Auth.AccountState(rawValue: stateName) else {
            throw ServiceError.internal("unknown account state \(stateName)")
        }
        self.state = state
        stateVersion = try row.int64("state_version")
        deletionStartedAt = try row.optionalInt64("deletion_started_at")
    }
}

/// The lifecycle of accounts (`users.state`, API.md "Account lifecycle and moderation"): a
/// password change, a deletion and its last step, a suspension. Each change of state bumps
/// `state_version` and emits `auth.account.state_changed` in its transaction; each end of
/// sessions emits `auth.session.revoked`.
protocol AccountLifecycleStore: Sendable {
    /// The account with `userId`, in any state; nil when none.
    func credentials(userId: String) async throws -> AccountCredentials?

    /// Sets the password hash of an active account and revokes every live session of it but
    /// `keeping` (emitting `auth.session.revoked` when there was one), in one transaction.
    /// - Returns: the revoked sessions' ids.
    /// - Throws: 404 when the account is not active.
    func changePassword(userId: String, passwordHash: String, keeping: String, now: Int64) async throws -> [String]

    /// Marks the account `deleting` and revokes all its sessions, or answers the deletion
    /// already under way.
    /// - Returns: the deletion's state version, its start (Unix ms) and the sessions it ended.
    /// - Throws: 404 when the account is gone or suspended.
    func beginDeletion(userId: String, now: Int64) async throws -> (version: Int64, startedAt: Int64, revoked: [String])

    /// Suspends an active account (revoking its sessions) or restores a suspended one.
    /// - Returns: the state and its version afterwards (unchanged when it already was so).
    /// - Throws: 404 when the account does not exist or is being deleted.
    func setSuspension(userId: String, suspended: Bool, moderatorId: String, now: Int64) async throws
        -> Auth.SetSuspension.Reply

    /// The states of the accounts among `userIds` that exist.
    func states(userIds: [String]) async throws -> [String: Auth.AccountStateChanged]
}

/// `AccountLifecycleStore` on a SQL `Database`, either engine.
struct SQLAccountLifecycleStore: AccountLifecycleStore {
    let database: Database

    static let columns: SQL =
        "id, username, email, version, password_hash, state, state_version, deletion_started_at"

    func credentials(userId: String) async throws -> AccountCredentials? {
        try await database.read { c in
            try c.queryOne(AccountCredentials.self, "SELECT \(Self.columns) FROM users WHERE id = \(userId)")
        }
    }

    /// The account's row, locked for the transaction's update on PostgreSQL (`FOR UPDATE`; a
    /// SQLite write transaction holds the whole database).
    private static func locked(_ userId: String, in tx: Transaction) throws -> AccountCredentials? {
        try tx.connection.queryOne(
            AccountCredentials.self,
            "SELECT \(columns) FROM users WHERE id = \(userId)\(SQL.forUpdate)")
    }

    /// Revokes the user's live sessions (all, or all but `keeping`) and emits
    /// `auth.session.revoked` when there were any. - Returns: their ids.
    @discardableResult
    private static func revokeSessions(userId: String, keeping: String?, now: Int64, in tx: Transaction) throws
        -> [String]
    {
        let rows = try tx.query(
            """
            SELECT id, expires_at FROM sessions WHERE user_id = \(userId) AND revoked_at IS NULL
                AND expires_at > \(now) AND id <> \(keeping ?? "") ORDER BY created_at, id
            """
        )
        guard !rows.isEmpty else { return [] }
        let ids = try rows.map { try $0.string("id") }
        let expiresAt = try rows.map { try $0.int64("expires_at") }.max() ?? now
        try tx.query(
            """
            UPDATE sessions SET revoked_at = \(now) WHERE user_id = \(userId) AND revoked_at IS NULL
                AND expires_at > \(now) AND id <> \(keeping ?? "")
            """
        )
        try tx.emit(Auth.SessionRevoked(userId: userId, sessionIds: ids, expiresAt: Timestamp.format(ms: expiresAt)))
        return ids
    }

    /// Sets the state, bumps its version and emits the change.
    private static func setState(
        _ state: Auth.AccountState, of account: AccountCredentials, moderatorId: String?, now: Int64, in tx: Transaction
    ) throws -> Int64 {
        let version = account.stateVersion + 1
        try tx.query(
            """
            UPDATE users SET state = \(state.rawValue), state_version = \(version),
                deletion_started_at = \(state == .deleting ? now : nil) WHERE id = \(account.identity.id)
            """
        )
        try tx.emit(
            Auth.AccountStateChanged(
                userId: account.identity.id, state: state, version: version, at: Timestamp.format(ms: now),
                moderatorId: moderatorId))
        return version
    }

    func changePassword(userId: String, passwordHash: String, keeping: String, now: Int64) async throws -> [String] {
        try await database.write { tx in
            guard let account = try Self.locked(userId, in: tx), account.state == .active else {
                throw ServiceError.notFound("user")
            }
            try tx.query("UPDATE users SET password_hash = \(passwordHash) WHERE id = \(userId)")
            return try Self.revokeSessions(userId: userId, keeping: keeping, now: now, in: tx)
        }
    }

    func beginDeletion(userId: String, now: Int64) async throws -> (version: Int64, startedAt: Int64, revoked: [String]) {
        try await database.write { tx in
            guard let account = try Self.locked(userId, in: tx), account.state != .suspended else {
                throw ServiceError.notFound("user")
            }
            if account.state == .deleting, let started = account.deletionStartedAt {
                return (account.stateVersion, started, [])
            }
            let revoked = try Self.revokeSessions(userId: userId, keeping: nil, now: now, in: tx)
            return (try Self.setState(.deleting, of: account, moderatorId: nil, now: now, in: tx), now, revoked)
        }
    }

    func setSuspension(userId: String, suspended: Bool, moderatorId: String, now: Int64) async throws
        -> Auth.SetSuspension.Reply
    {
        try await database.write { tx in
            guard let account = try Self.locked(userId, in: tx), account.state != .deleting else {
                throw ServiceError.notFound("user")
            }
            let wanted: Auth.AccountState = suspended ? .suspended : .active
            guard account.state != wanted else {
                return Auth.SetSuspension.Reply(state: account.state, version: account.stateVersion)
            }
            let revoked = suspended ? try Self.revokeSessions(userId: userId, keeping: nil, now: now, in: tx) : []
            let version = try Self.setState(wanted, of: account, moderatorId: moderatorId, now: now, in: tx)
            return Auth.SetSuspension.Reply(state: wanted, version: version, revokedSessionIds: revoked)
        }
    }

    func states(userIds: [String]) async throws -> [String: Auth.AccountStateChanged] {
        guard !userIds.isEmpty else { return [:] }
        return try await database.read { c in
            var states: [String: Auth.AccountStateChanged] = [:]
            for row in try c.query(
                """
                SELECT id, state, state_version, deletion_started_at FROM users
                WHERE id IN (\(list: Array(Set(userIds.prefix(1_000)))))
                """
            ) {
                let id = try row.string("id")
                guard let state = Auth.AccountState(rawValue: try row.string("state")) else { continue }
                states[id] = Auth.AccountStateChanged(
                    userId: id, state: state, version: try row.int64("state_version"),
                    at: Timestamp.format(ms: try row.optionalInt64("deletion_started_at") ?? 0))
            }
            return states
        }
    }

    /// The saga's last step (`notification.account.erased`), in the subscriber's transaction:
    /// deletes the account's sessions, its login failures and the account, and emits
    /// `auth.account.deleted`. Nothing when the account is not being deleted (a replayed event).
    /// - Returns: how long the deletion took, from its start, in ms; nil when nothing was done.
    @discardableResult
    static func finishDeletion(userId: String, now: Int64, in tx: Transaction) throws -> Int64? {
        guard let account = try locked(userId, in: tx), account.state == .deleting else { return nil }
        try tx.query("DELETE FROM sessions WHERE user_id = \(userId)")
        try tx.query(
            """
            DELETE FROM login_failures WHERE account_key = \(LoginThrottle.key(accountId: userId, login: "", clientAddress: nil).account)
            """
        )
        try tx.query("DELETE FROM users WHERE id = \(userId)")
        try redactEvents(of: userId, in: tx)
        try tx.emit(
            Auth.AccountDeleted(
                userId: userId, startedAt: Timestamp.format(ms: account.deletionStartedAt ?? now),
                doneAt: Timestamp.format(ms: now)))
        return now - (account.deletionStartedAt ?? now)
    }

    /// Redacts the account's past events in AuthService's outbox (`Outbox.redact`): its
    /// registration, renames and session ends become `redacted`, and an import batch keeps its
    /// other accounts; the lifecycle's own events (ids and times only) stay. It runs last in the
    /// saga, when every subscriber has done with the account (its `notification.account.erased`
    /// came after everything they had of it), so nothing a subscriber still needs is lost. One
    /// scan of the outbox per deletion (bodies matched with LIKE, no index).
    /// - Throws: the engine's error.
    static func redactEvents(of userId: String, in tx: Transaction) throws {
        let imported: @Sendable (String) -> String? = { body in
            guard var event = try? WireJSON.decode(Auth.UsersImported.self, from: Array(body.utf8)) else { return nil }
            event.identities.removeAll { $0.id == userId }
            guard !event.identities.isEmpty, let bytes = try? WireJSON.encode(event) else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
        try Outbox.redact(
            mentioning: userId, after: 0, through: Outbox.head(in: tx),
            keeping: [Auth.AccountStateChanged.type, Auth.AccountDeleted.type],
            rewrite: [Auth.UsersImported.type: imported], in: tx)
    }
}
