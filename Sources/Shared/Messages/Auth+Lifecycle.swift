import Wire

/// An account's lifecycle (API.md "Account lifecycle and moderation"): password change,
/// deletion and suspension in AuthService, and the saga that erases a deleted account from
/// every service.
///
/// The deletion saga, each step an event in its producer's outbox (applied exactly once, in
/// order, by `EventSubscriber`; each step idempotent, so a crash anywhere repeats at most the
/// batch it was in):
///
/// 1. `auth.delete_account` marks the account `deleting`, ends its sessions and emits
///    `auth.account.state_changed` (state `deleting`). The gateway also sends the new state to
///    ProfileService and NotificationService (`ApplyAccountState`) before it answers 202, so the
///    user's content is gone at once rather than when the event arrives.
/// 2. ProfileService erases the user's posts, media files, likes, comments, tags, profile and
///    settings in batches, then emits `profile.account.erased`.
/// 3. NotificationService (which has applied every event ProfileService emitted before that one)
///    erases the follow graph both ways with its counts, requests, blocks, mutes, devices and
///    every notification to or by the user with the groups and badges they were in, then emits
///    `notification.account.erased`.
/// 4. AuthService deletes the account itself (its username and email are free from then on)
///    and emits `auth.account.deleted`: the deletion is done when that event exists.
extension Auth {
    /// An account's state. `deleting` lasts from `auth.delete_account` until the account is
    /// erased everywhere; then the account does not exist.
    public enum AccountState: String, Codable, Sendable, CaseIterable {
        case active
        /// A moderator suspended it: no sessions, login 403 `account_suspended`, its content
        /// and notifications hidden from others until the suspension is lifted.
        case suspended
        /// Being erased: no sessions, login 401, its content 404 to everyone.
        case deleting
    }

    /// Sets a new password after checking the current one; every other session of the user
    /// ends (`auth.session.revoked`). Throttled as login is, per account and client address.
    /// Errors: 403 `invalid_credentials` (wrong current password), 400 `weak_password` /
    /// `password_too_long` (field `newPassword`), 429 `too_many_attempts`, 404 when the
    /// account is not active.
    public enum ChangePassword: RPC {
        public static let type = "auth.change_password"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            public var userId: String
            /// The session the request came with: the one that stays.
            public var sessionId: String
            public var currentPassword: String
            public var newPassword: String
            public var clientAddress: String?
            public init(
                userId: String, sessionId: String, currentPassword: String, newPassword: String,
                clientAddress: String? = nil
            ) {
                self.userId = userId
                self.sessionId = sessionId
                self.currentPassword = currentPassword
                self.newPassword = newPassword
                self.clientAddress = clientAddress
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            /// The sessions that ended (every one of the user's but `sessionId`).
            public var revokedSessionIds: [String]
            public init(revokedSessionIds: [String]) { self.revokedSessionIds = revokedSessionIds }
        }
    }

    /// Starts deleting the account (see the saga above): every session ends, login is 401, the
    /// username and email stay taken until the erasure is done. A repeat while the deletion runs
    /// answers the same deletion. Throttled as login is. Errors: 403 `invalid_credentials`
    /// (wrong password), 429 `too_many_attempts`, 404 when the account is gone or suspended.
    public enum DeleteAccount: RPC {
        public static let type = "auth.delete_account"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var password: String
            public var clientAddress: String?
            public init(userId: String, password: String, clientAddress: String? = nil) {
                self.userId = userId
                self.password = password
                self.clientAddress = clientAddress
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            /// Always `deleting` (API.md: 202 `{status: "deleting"}`).
            public var status: AccountState
            /// The state's version (`AccountStateChanged.version`).
            public var version: Int64
            /// RFC 3339: when the deletion began.
            public var startedAt: String
            /// The sessions that ended (empty on a repeat).
            public var revokedSessionIds: [String]
            public init(status: AccountState, version: Int64, startedAt: String, revokedSessionIds: [String]) {
                self.status = status
                self.version = version
                self.startedAt = startedAt
                self.revokedSessionIds = revokedSessionIds
            }
        }
    }

    /// A moderator suspends an account, or lifts its suspension. Suspending ends every
    /// session; both emit `auth.account.state_changed`. Idempotent: the same state again
    /// changes nothing and emits nothing. Errors: 404 when the account does not exist or is
    /// being deleted.
    public enum SetSuspension: RPC {
        public static let type = "auth.set_suspension"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var suspended: Bool
            /// Who did it (kept in the event; never shown to the user).
            public var moderatorId: String
            public init(userId: String, suspended: Bool, moderatorId: String) {
                self.userId = userId
                self.suspended = suspended
                self.moderatorId = moderatorId
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var state: AccountState
            public var version: Int64
            /// The sessions a suspension ended.
            public var revokedSessionIds: [String]
            public init(state: AccountState, version: Int64, revokedSessionIds: [String] = []) {
                self.state = state
                self.version = version
                self.revokedSessionIds = revokedSessionIds
            }
        }
    }

    /// The states of accounts by id (absent: no such account). For the gateway and operators.
    public enum AccountStates: RPC {
        public static let type = "auth.account_states"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userIds: [String]
            public init(userIds: [String]) { self.userIds = userIds }
        }
        public struct Reply: Codable, Sendable {
            public var states: [String: AccountStateChanged]
            public init(states: [String: AccountStateChanged]) { self.states = states }
        }
    }

    /// Published when an account's state changes: suspended, restored (`active`) or deleting.
    /// `version` increases by one with each change of the account, so a consumer that hears of
    /// a state twice (from this event and from `ApplyAccountState`) keeps the newest.
    public struct AccountStateChanged: Event, Equatable {
        public static let type = "auth.account.state_changed"
        public var userId: String
        public var state: AccountState
        public var version: Int64
        /// RFC 3339.
        public var at: String
        /// The moderator who suspended or restored it (nil for the user's own deletion).
        public var moderatorId: String?
        public init(userId: String, state: AccountState, version: Int64, at: String, moderatorId: String? = nil) {
            self.userId = userId
            self.state = state
            self.version = version
            self.at = at
            self.moderatorId = moderatorId
        }
    }

    /// Published when a deleted account is erased from AuthService, the last step of the saga:
    /// nothing of it remains in any service, and its username and email are free.
    public struct AccountDeleted: Event, Equatable {
        public static let type = "auth.account.deleted"
        public var userId: String
        /// RFC 3339: when the deletion began and when it was done.
        public var startedAt: String
        public var doneAt: String
        public init(userId: String, startedAt: String, doneAt: String) {
            self.userId = userId
            self.startedAt = startedAt
            self.doneAt = doneAt
        }
    }
}

/// A service's copy of an account's state, sent by the gateway as soon as AuthService changed it
/// (the `auth.account.state_changed` event brings the same later): the service applies it only
/// when `version` is newer than what it holds. Reply `Empty`.
public struct AccountStateRequest: Codable, Sendable, Equatable {
    public var userId: String
    public var state: Auth.AccountState
    public var version: Int64
    public init(userId: String, state: Auth.AccountState, version: Int64) {
        self.userId = userId
        self.state = state
        self.version = version
    }
}

extension Profile {
    /// See `AccountStateRequest`.
    public enum ApplyAccountState: RPC {
        public static let type = "profile.apply_account_state"
        public static let isIdempotent = true
        public typealias Request = AccountStateRequest
        public typealias Reply = Empty
    }

    /// Step 2 of the deletion saga (see `Auth`): nothing of the user remains in ProfileService
    /// (reports the user filed stay, without the reporter).
    public struct AccountErased: Event, Equatable {
        public static let type = "profile.account.erased"
        public var userId: String
        public init(userId: String) { self.userId = userId }
    }
}

extension Notifications {
    /// See `AccountStateRequest`.
    public enum ApplyAccountState: RPC {
        public static let type = "notification.apply_account_state"
        public static let isIdempotent = true
        public typealias Request = AccountStateRequest
        public typealias Reply = Empty
    }

    /// Step 3 of the deletion saga (see `Auth`): nothing of the user remains in
    /// NotificationService, and every count, group and badge that referred to it is corrected.
    public struct AccountErased: Event, Equatable {
        public static let type = "notification.account.erased"
        public var userId: String
        public init(userId: String) { self.userId = userId }
    }
}
