import Wire

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
    ///
    /// A repeat of a registration that is not finished yet (no `CompleteRegistration` since,
    /// e.g. ProfileService died before the profile was made and the client got 503) is finished
    /// instead of refused: when the email and the username both belong to one such account,
    /// registered within `resumeWindowMs`, and the password matches it, the reply is that
    /// account with a new session.
    /// Errors: 400 `invalid_email` / `invalid_username` / `weak_password` / `password_too_long`
    /// (with `fields`), 409 `email_taken` / `username_taken`.
    public enum Register: RPC {
        public static let type = "auth.register"
        public static let isIdempotent = false
        /// How long after an account's creation a repeat of its unfinished registration still
        /// finishes it (1 hour), in ms.
        public static let resumeWindowMs: Int64 = 3_600_000
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

    /// Marks an account's registration finished (the gateway calls it once the profile exists),
    /// so a repeat of its `Register` is 409 again. Idempotent; an unknown id is no error.
    public enum CompleteRegistration: RPC {
        public static let type = "auth.complete_registration"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public init(userId: String) { self.userId = userId }
        }
        public typealias Reply = Empty
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
            /// Whether the session was made while its account held the moderator role (the role
            /// holds from the login after `AuthService moderator grant`, and goes from every
            /// session at `revoke`). False when an older AuthService left it out.
            public var moderator: Bool
            public init(userId: String, sessionId: String, username: String, expiresAt: String, moderator: Bool = false) {
                self.userId = userId
                self.sessionId = sessionId
                self.username = username
                self.expiresAt = expiresAt
                self.moderator = moderator
            }

            enum CodingKeys: String, CodingKey {
                case userId, sessionId, username, expiresAt, moderator
            }

            /// Decodes the reply, `moderator` false when absent. - Throws: `DecodingError`.
            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                userId = try c.decode(String.self, forKey: .userId)
                sessionId = try c.decode(String.self, forKey: .sessionId)
                username = try c.decode(String.self, forKey: .username)
                expiresAt = try c.decode(String.self, forKey: .expiresAt)
                moderator = try c.decodeIfPresent(Bool.self, forKey: .moderator) ?? false
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

    /// Creates many accounts in one transaction, all with one precomputed password hash: the
    /// bulk import a load test (or a migration) uses instead of one argon2id hash per
    /// registration. Never routed by the gateway: only ZeroMQ clients that reach AuthService's
    /// RPC endpoint (CURVE-authenticated in deployment) can send it.
    ///
    /// Request `{"passwordHash": "$argon2id$v=19$m=19456,t=2,p=1$...", "users": [{"username",
    /// "email"}, ...]}` with 1...`maxUsers` users; each username and email is normalised and
    /// checked by the rules of `auth.register`. The hash is libsodium's argon2id PHC string
    /// (`crypto_pwhash_str`), with parameters at least AuthService's policy (m = 19,456 KiB,
    /// t = 2, p = 1; OWASP's argon2id minimum) and at most what a login can afford: an import
    /// never weakens password storage.
    ///
    /// Idempotent, so an interrupted import can be sent again: a user whose username and email
    /// both belong to one existing account is answered as that account (`created: false`).
    /// Reply `{"users": [{"username", "id", "created"}, ...]}` in request order (usernames
    /// normalised). Every new account is written in one transaction with one
    /// `auth.users.imported` event (none when nothing was created).
    ///
    /// Errors (nothing of the batch written): 400 `invalid_request` (no users, or more than
    /// `maxUsers`, field `users`), 400 `invalid_password_hash` (field `passwordHash`), 400 with
    /// `fields` named `users[<index>].username` / `users[<index>].email` (`invalid_username`,
    /// `invalid_email`, `duplicate_username`, `duplicate_email` for a name or email given twice
    /// in the batch; `validation_failed` when several), 409 `username_taken` / `email_taken` with
    /// the same field names when a username or email belongs to another account than the
    /// entry's. At most `maxFieldErrors` fields are listed; the message gives the total.
    public enum ImportUsers: RPC {
        public static let type = "auth.import_users"
        public static let isIdempotent = true
        /// Most users in one request.
        public static let maxUsers = 5_000
        /// Most entries in an error's `fields`.
        public static let maxFieldErrors = 100

        /// One account to create.
        public struct User: Codable, Sendable, Equatable {
            public var username: String
            public var email: String
            public init(username: String, email: String) {
                self.username = username
                self.email = email
            }
        }

        public struct Request: Codable, Sendable {
            /// libsodium argon2id PHC string shared by every user of the batch.
            public var passwordHash: String
            public var users: [User]
            public init(passwordHash: String, users: [User]) {
                self.passwordHash = passwordHash
                self.users = users
            }
        }

        /// One user's outcome, in request order.
        public struct Imported: Codable, Sendable, Equatable {
            /// Normalised (lower-case).
            public var username: String
            /// The account's id (32 hex digits).
            public var id: String
            /// False when the account already existed with this username and email.
            public var created: Bool
            public init(username: String, id: String, created: Bool) {
                self.username = username
                self.id = id
                self.created = created
            }
        }

        public struct Reply: Codable, Sendable {
            public var users: [Imported]
            public init(users: [Imported]) { self.users = users }
        }
    }

    /// Starts one session for each of many existing accounts, in one transaction, without a
    /// password: what a load test uses instead of one argon2id verification per login (about
    /// 28 logins a second on two cores). Never routed by the gateway, and refused unless
    /// AuthService runs with `ALLOW_IMPORTS=1`: only ZeroMQ clients that reach its
    /// RPC endpoint (CURVE-authenticated in deployment) can send it, and only to a service
    /// configured for load tests.
    ///
    /// Request `{"userIds": ["<32 hex>", ...]}` with 1...`maxUsers` distinct account ids. Reply
    /// `{"sessions": [{"identity", "session"}, ...]}`: one `auth.login` reply per id, in request
    /// order. Each session is an ordinary one (the service's session lifetime; the gateway's
    /// bearer check, `auth.logout` and the session purge treat it as a login's); the tokens are
    /// shown once. Not idempotent: sending the batch again starts other sessions.
    ///
    /// Errors (nothing of the batch written): 403 `forbidden` when the service does not allow
    /// it (the message names `ALLOW_IMPORTS`), 400 `invalid_request` (no ids, or
    /// more than `maxUsers`, field `userIds`), 400 with fields `userIds[<index>]`
    /// (`invalid_field` for an id that is not 32 lower-case hex digits or is given twice,
    /// `unknown_user` for an id no account has; `validation_failed` when several). At most
    /// `maxFieldErrors` fields are listed; the message gives the total.
    public enum ImportSessions: RPC {
        public static let type = "auth.import_sessions"
        public static let isIdempotent = false
        /// Most accounts in one request.
        public static let maxUsers = 5_000
        /// Most entries in an error's `fields`.
        public static let maxFieldErrors = 100

        public struct Request: Codable, Sendable {
            /// Account ids (32 lower-case hex digits), each at most once.
            public var userIds: [String]
            public init(userIds: [String]) { self.userIds = userIds }
        }

        public struct Reply: Codable, Sendable {
            /// One per requested id, in request order.
            public var sessions: [SessionReply]
            public init(sessions: [SessionReply]) { self.sessions = sessions }
        }
    }

    // MARK: Events

    /// Published when an account is created.
    public struct UserRegistered: Event {
        public static let type = "auth.user.registered"
        public var identity: Identity
        public init(identity: Identity) { self.identity = identity }
    }

    /// Published once per `auth.import_users` batch that created accounts: the new identities
    /// only (version 1), in request order. Replicas apply it as they apply one
    /// `auth.user.registered` per identity.
    public struct UsersImported: Event, Equatable {
        public static let type = "auth.users.imported"
        public var identities: [Identity]
        public init(identities: [Identity]) { self.identities = identities }
    }

    /// Published when a username or email changes.
    public struct IdentityChanged: Event {
        public static let type = "auth.user.changed"
        public var identity: Identity
        public init(identity: Identity) { self.identity = identity }
    }

    /// Published when sessions end (logout); gateways drop cached tokens and close their streams,
    /// NotificationService removes the sessions' devices and remembers the sessions until
    /// `expiresAt`, refusing a device registered with one afterwards.
    public struct SessionRevoked: Event {
        public static let type = "auth.session.revoked"
        public var userId: String
        public var sessionIds: [String]
        /// RFC 3339: when the last of the sessions would have expired (after it no token of
        /// them is accepted anyway). Nil from an AuthService older than the field.
        public var expiresAt: String?
        public init(userId: String, sessionIds: [String], expiresAt: String? = nil) {
            self.userId = userId
            self.sessionIds = sessionIds
            self.expiresAt = expiresAt
        }
    }
}
