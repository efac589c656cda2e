/// AuthService's messages: accounts, passwords, sessions. Producer name for events: `auth`.
public enum Auth {
    /// A new session: the bearer token (shown once, only its hash is stored) and its expiry.
    public struct Session: Codable, Sendable, Equatable {
        public var token: String
        public var sessionId: String
        /// RFC 3339.
        public var expiresAt: String
        public init(token: String, sessionId: String, expiresAt: String) {
            self.token = token
            self.sessionId = sessionId
            self.expiresAt = expiresAt
        }
    }

    /// The reply to register and login.
    public struct SessionReply: Codable, Sendable, Equatable {
        public var identity: Identity
        public var session: Session
        public init(identity: Identity, session: Session) {
            self.identity = identity
            self.session = session
        }
    }

    /// Creates an account and its first session.
    /// Errors: 400 `invalid_email` / `invalid_username` / `weak_password` / `password_too_long`
    /// (with `fields`), 409 `email_taken` / `username_taken`.
    public enum Register: RPC {
        public static let type = "auth.register"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            public var email: String
            public var username: String
            public var password: String
            public init(email: String, username: String, password: String) {
                self.email = email
                self.username = username
                self.password = password
            }
        }
        public typealias Reply = SessionReply
    }

    /// Logs in by email or username (case-insensitive), throttled per account and client
    /// address. Errors: 401 `invalid_credentials` (same for unknown user and wrong password),
    /// 429 `too_many_attempts` with `retryAfter` seconds, 503 `busy` with `retryAfter`.
    public enum Login: RPC {
        public static let type = "auth.login"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            public var login: String
            public var password: String
            /// The client's IP address as the gateway saw it (nil when unknown: all such
            /// attempts share one address for throttling).
            public var clientAddress: String?
            public init(login: String, password: String, clientAddress: String? = nil) {
                self.login = login
                self.password = password
                self.clientAddress = clientAddress
            }
        }
        public typealias Reply = SessionReply
    }

    /// Revokes the token's session, or every session of its user. Errors: 401 `invalid_token`.
    public enum Logout: RPC {
        public static let type = "auth.logout"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var token: String
            public var allSessions: Bool
            public init(token: String, allSessions: Bool) {
                self.token = token
                self.allSessions = allSessions
            }
        }
        public struct Reply: Codable, Sendable {
            public var userId: String
            public var revokedSessionIds: [String]
            public init(userId: String, revokedSessionIds: [String]) {
                self.userId = userId
                self.revokedSessionIds = revokedSessionIds
            }
        }
    }

    /// Checks a bearer token. Errors: 401 `invalid_token` (unknown, expired or revoked).
    public enum Validate: RPC {
        public static let type = "auth.validate"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var token: String
            public init(token: String) { self.token = token }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var userId: String
            public var sessionId: String
            public var username: String
            /// RFC 3339.
            public var expiresAt: String
            public init(userId: String, sessionId: String, username: String, expiresAt: String) {
                self.userId = userId
                self.sessionId = sessionId
                self.username = username
                self.expiresAt = expiresAt
            }
        }
    }

    /// Looks identities up by id and/or username (case-insensitive); unknown ones are left out.
    public enum LookupUsers: RPC {
        public static let type = "auth.lookup_users"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var ids: [String]
            public var usernames: [String]
            public init(ids: [String] = [], usernames: [String] = []) {
                self.ids = ids
                self.usernames = usernames
            }
        }
        public struct Reply: Codable, Sendable {
            public var users: [Identity]
            public init(users: [Identity]) { self.users = users }
        }
    }

    /// Changes username and/or email. Errors: 404, 400 `invalid_email` / `invalid_username`
    /// (with `fields`), 409 `email_taken` / `username_taken`.
    public enum ChangeIdentity: RPC {
        public static let type = "auth.change_identity"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var username: String?
            public var email: String?
            public init(userId: String, username: String?, email: String?) {
                self.userId = userId
                self.username = username
                self.email = email
            }
        }
        public typealias Reply = Identity
    }

    /// Checks identity fields against AuthService's rules without creating or changing
    /// anything (nil = not checked), so a caller that also has other fields to validate can
    /// report every error at once before acting. Uniqueness is not checked here (409 comes
    /// from register or change). Errors: 400 with `fields`.
    public enum CheckIdentityFields: RPC {
        public static let type = "auth.check_fields"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var email: String?
            public var username: String?
            public var password: String?
            public init(email: String? = nil, username: String? = nil, password: String? = nil) {
                self.email = email
                self.username = username
                self.password = password
            }
        }
        public typealias Reply = Empty
    }

    // MARK: Events

    /// Published when an account is created.
    public struct UserRegistered: Event {
        public static let type = "auth.user.registered"
        public var identity: Identity
        public init(identity: Identity) { self.identity = identity }
    }

    /// Published when a username or email changes.
    public struct IdentityChanged: Event {
        public static let type = "auth.user.changed"
        public var identity: Identity
        public init(identity: Identity) { self.identity = identity }
    }

    /// Published when sessions end (logout); gateways drop cached tokens and close their streams.
    public struct SessionRevoked: Event {
        public static let type = "auth.session.revoked"
        public var userId: String
        public var sessionIds: [String]
        public init(userId: String, sessionIds: [String]) {
            self.userId = userId
            self.sessionIds = sessionIds
        }
    }
}
