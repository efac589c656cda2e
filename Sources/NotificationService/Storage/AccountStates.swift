import Messages
import Storage
import Wire

/// An account's state as NotificationService keeps it (`account_states.state`, see
/// `AccountSchema`): AuthService's three states and the tombstone of an erased account.
enum AccountState: Int64, Sendable, CaseIterable {
    case active = 0
    case suspended = 1
    case deleting = 2
    /// Erased here (`profile.account.erased` arrived): permanent, whatever AuthService says later.
    case erased = 3

    /// AuthService's state.
    init(_ state: Auth.AccountState) {
        switch state {
        case .active: self = .active
        case .suspended: self = .suspended
        case .deleting: self = .deleting
        }
    }

    /// Whether others see nothing of the account: every state but `active` (API.md: a suspended
    /// or deleted user answers 404 to others, their notifications to others are hidden).
    var isHidden: Bool { self != .active }
}

/// Every statement on `account_states`: the states applied from `auth.account.state_changed`
/// and `notification.apply_account_state` (whichever comes second with a version not newer
/// changes nothing), the tombstone `profile.account.erased` leaves, and the checks the graph,
/// the notification writer and the event handlers make, on the caller's connection or in its
/// transaction.
enum AccountStates {
    /// `user`'s state (`active` when it has no row). - Throws: `DatabaseError`.
    static func state(_ user: Int64, on c: DatabaseConnection) throws -> AccountState {
        guard let raw = try c.scalar("SELECT state FROM account_states WHERE user_key = \(user)") else { return .active }
        return AccountState(rawValue: raw) ?? .active
    }

    /// Whether `user` is hidden from others (suspended, deleting or erased). - Throws: `DatabaseError`.
    static func isHidden(_ user: Int64, on c: DatabaseConnection) throws -> Bool {
        try state(user, on: c).isHidden
    }

    /// Whether the account with id `id` is erased (false when this database never saw it).
    /// - Throws: `DatabaseError`.
    static func isErased(id: String, on c: DatabaseConnection) throws -> Bool {
        try c.exists(
            "SELECT 1 FROM account_states WHERE user_id = \(id) AND state = \(literal: AccountState.erased.rawValue)")
    }

    /// Whether any of the accounts with ids `ids` is erased. - Throws: `DatabaseError`.
    static func anyErased(_ ids: [String], on c: DatabaseConnection) throws -> Bool {
        try ids.contains { try isErased(id: $0, on: c) }
    }

    /// Throws 404 `not_found` (as for an unknown user) when any of `users` is hidden.
    /// - Throws: `ServiceError` 404, `DatabaseError`.
    static func requireVisible(_ users: [Int64], on c: DatabaseConnection) throws {
        if try users.contains(where: { try isHidden($0, on: c) }) { throw ServiceError.notFound("user") }
    }

    /// The SQL condition that the user `key` (an SQL expression over the statement's columns, or
    /// a bound key) is active: one seek into `account_states`, a table of the accounts whose state
    /// ever changed. Written into the statements that make notifications and read lists, so that
    /// a hidden user is checked in the same statement (`NotificationWriter.insert`).
    static func active(_ key: SQL) -> SQL {
        "NOT EXISTS (SELECT 1 FROM account_states s WHERE s.user_key = \(key) AND s.state <> 0)"
    }

    /// Applies AuthService's `state` (version `version`) of account `userId`, in `tx`, unless the
    /// stored one is as new or newer, or the account is erased here. The account's lock is taken
    /// first (`Relations.lockAccounts`), so a notification, follow, block or fan-out batch that
    /// involves the account either committed before (and `AccountWorker` finds what it made) or
    /// sees the new state. When the state changes, `AccountJobs` gets the account: its
    /// notifications to others are moved aside (suspended), removed (deleting) or brought back
    /// (active) by the worker.
    /// - Parameter nowMs: Unix ms.
    /// - Returns: whether the stored state changed. - Throws: `DatabaseError`.
    @discardableResult
    static func apply(userId: String, state: Auth.AccountState, version: Int64, nowMs: Int64, in tx: Transaction) throws
        -> Bool
    {
        let user = try Keys.user(userId, in: tx)
        try Relations.lockAccounts([user], shared: false, in: tx)
        let stored = try tx.connection.queryOne("SELECT state, version FROM account_states WHERE user_key = \(user)")
        if let stored {
            if try stored.int64("state") == AccountState.erased.rawValue { return false }
            if try stored.int64("version") >= version { return false }
        }
        let new = AccountState(state)
        try tx.query(
            """
            INSERT INTO account_states(user_key, user_id, state, version, changed_at)
                VALUES (\(user), \(userId), \(new.rawValue), \(version), \(nowMs))
            ON CONFLICT(user_key) DO UPDATE SET state = excluded.state, version = excluded.version,
                changed_at = excluded.changed_at
            """)
        let old = try stored.map { AccountState(rawValue: try $0.int64("state")) ?? .active } ?? .active
        if old != new { try AccountJobs.add(user, nowMs: nowMs, in: tx) }
        return true
    }

    /// Marks account `userId` erased for good (ProfileService erased it: `profile.account.erased`)
    /// under its lock, in `tx`, and starts its erasure (`AccountJobs.startErasure`). Nothing when it
    /// is erased already.
    /// - Parameter nowMs: Unix ms.
    /// - Returns: whether it was marked now. - Throws: `DatabaseError`.
    @discardableResult
    static func erase(userId: String, nowMs: Int64, in tx: Transaction) throws -> Bool {
        let user = try Keys.user(userId, in: tx)
        try Relations.lockAccounts([user], shared: false, in: tx)
        if try state(user, on: tx.connection) == .erased { return false }
        try tx.query(
            """
            INSERT INTO account_states(user_key, user_id, state, version, changed_at)
                VALUES (\(user), \(userId), \(AccountState.erased.rawValue), 0, \(nowMs))
            ON CONFLICT(user_key) DO UPDATE SET state = excluded.state, changed_at = excluded.changed_at
            """)
        try AccountJobs.startErasure(user, nowMs: nowMs, in: tx)
        return true
    }
}
