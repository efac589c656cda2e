import Wire

/// NotificationService's push messages (API.md "Devices and push"): a user's APNs devices and
/// their per-type push preferences. The gateway checks the shape of what clients send (platform,
/// token, environment); the service stores it.
extension Notifications {
    /// A registered device as the API shows it: `{id, platform, environment, createdAt}`.
    public struct Device: Codable, Sendable, Equatable {
        /// 32 random hex digits.
        public var id: String
        /// `ios` (the only platform).
        public var platform: String
        /// `sandbox` or `production`: which APNs environment the token belongs to.
        public var environment: String
        /// RFC 3339, when it was (last) registered.
        public var createdAt: String
        public init(id: String, platform: String, environment: String, createdAt: String) {
            self.id = id
            self.platform = platform
            self.environment = environment
            self.createdAt = createdAt
        }
    }

    /// Registers an APNs device token for `userId`, from session `sessionId` (logout removes it).
    /// A token belongs to one user: registering one another user holds moves it to the caller
    /// only from the same app installation (`installationId`: a sign-out and sign-in on one
    /// phone; a new device id, the previous owner's queued pushes to it dropped), at most 10
    /// moves an hour per account; registering one the caller holds again keeps its id and
    /// updates its environment, session, installation and `createdAt`. A user keeps at most 20
    /// devices: a new one past that removes their oldest. The session must not have ended: the
    /// check and the insert are one transaction with the logout's removal, so a device never
    /// outlives its session. Idempotent. Errors: 400 `invalid_field` (field `token`,
    /// `environment` or `installationId`) for a value the gateway would not have sent; 401
    /// `invalid_token` for a session that ended; 409 `device_token_in_use` for another
    /// account's token from another installation; 429 `too_many_attempts` past the moves.
    public enum RegisterDevice: RPC {
        public static let type = "notification.register_device"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var sessionId: String
            /// Lowercase hex, 16...200 digits, even length.
            public var token: String
            /// `sandbox` or `production`.
            public var environment: String
            /// The app installation's UUID (API.md: made once per install): a token held by
            /// another account moves to the caller only with the same one. Nil from a gateway
            /// older than the field: such a registration never takes a token over.
            public var installationId: String?
            public init(userId: String, sessionId: String, token: String, environment: String, installationId: String? = nil) {
                self.userId = userId
                self.sessionId = sessionId
                self.token = token
                self.environment = environment
                self.installationId = installationId
            }
        }
        public typealias Reply = Device
    }

    /// The user's devices, newest registration first, paged (`PageCursor`). Errors: 400 `invalid_cursor`.
    public enum ListDevices: RPC {
        public static let type = "notification.list_devices"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var page: PageRequest
            public init(userId: String, page: PageRequest) {
                self.userId = userId
                self.page = page
            }
        }
        public typealias Reply = Page<Device>
    }

    /// Deletes one of the user's devices and its queued pushes. Errors: 404 `not_found` for an
    /// unknown id or another user's device (the same answer, so ids cannot be probed).
    public enum DeleteDevice: RPC {
        public static let type = "notification.delete_device"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            public var userId: String
            public var deviceId: String
            public init(userId: String, deviceId: String) {
                self.userId = userId
                self.deviceId = deviceId
            }
        }
        public typealias Reply = Empty
    }

    /// Which notification types are pushed to a user's devices (all on by default).
    public struct PushPreferences: Codable, Sendable, Equatable {
        /// Someone liked the user's post.
        public var like: Bool
        /// Someone started following the user.
        public var follow: Bool
        /// Someone commented on the user's post.
        public var comment: Bool
        /// Someone tagged the user in a post.
        public var tag: Bool
        /// Someone the user follows with post notifications on shared a new post.
        public var post: Bool
        /// All on unless said otherwise.
        public init(like: Bool = true, follow: Bool = true, comment: Bool = true, tag: Bool = true, post: Bool = true) {
            self.like = like
            self.follow = follow
            self.comment = comment
            self.tag = tag
            self.post = post
        }
    }

    /// The user's push preferences.
    public enum GetPushPreferences: RPC {
        public static let type = "notification.get_push_preferences"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public init(userId: String) { self.userId = userId }
        }
        public typealias Reply = PushPreferences
    }

    /// Changes the given push preferences (nil: unchanged) and returns all of them. Idempotent.
    public enum UpdatePushPreferences: RPC {
        public static let type = "notification.update_push_preferences"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var like: Bool?
            public var follow: Bool?
            public var comment: Bool?
            public var tag: Bool?
            public var post: Bool?
            public init(
                userId: String, like: Bool? = nil, follow: Bool? = nil, comment: Bool? = nil, tag: Bool? = nil,
                post: Bool? = nil
            ) {
                self.userId = userId
                self.like = like
                self.follow = follow
                self.comment = comment
                self.tag = tag
                self.post = post
            }
        }
        public typealias Reply = PushPreferences
    }
}
