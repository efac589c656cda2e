import Wire

/// NotificationService's messages of privacy and safety (API.md "Privacy and safety"): blocks,
/// mutes and follow requests are edges of the follow graph, so they live beside it.
extension Notifications {
    /// Blocks (`blocking: true`) or unblocks `username` for `userId`; idempotent. A block ends
    /// the follows both ways (all four counts), withdraws a pending follow request either way and
    /// removes the notifications between the two, in one transaction; it emits
    /// `notification.block.changed` (ProfileService keeps the pairs it must enforce). Unblocking
    /// restores visibility, not the follows. Errors: 404 `not_found` (an unknown user, or one who
    /// blocks the caller: to them the caller does not exist), 422 `cannot_block_self`.
    public enum SetBlock: RPC {
        public static let type = "notification.set_block"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var username: String
            public var blocking: Bool
            public init(userId: String, username: String, blocking: Bool) {
                self.userId = userId
                self.username = username
                self.blocking = blocking
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var blocking: Bool
            public init(blocking: Bool) { self.blocking = blocking }
        }
    }

    /// Mutes (`muting: true`) or unmutes `username` for `userId`; idempotent and private (the
    /// muted user is never told): no notification and no push from them from then on. Errors: 404
    /// `not_found`, 422 `cannot_mute_self`.
    public enum SetMute: RPC {
        public static let type = "notification.set_mute"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var username: String
            public var muting: Bool
            public init(userId: String, username: String, muting: Bool) {
                self.userId = userId
                self.username = username
                self.muting = muting
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var muting: Bool
            public init(muting: Bool) { self.muting = muting }
        }
    }

    /// A user in one of the caller's safety lists, and since when (RFC 3339).
    public struct UserSince: Codable, Sendable, Equatable {
        public var userId: String
        public var createdAt: String
        public init(userId: String, createdAt: String) {
            self.userId = userId
            self.createdAt = createdAt
        }
    }

    /// Which of the caller's lists `ListSafety` reads.
    public enum SafetyList: String, Codable, Sendable {
        /// The users the caller blocks.
        case blocks
        /// The users the caller mutes.
        case mutes
        /// The users whose follow requests to the caller are pending.
        case followRequests = "follow_requests"
    }

    /// One of the caller's lists (`SafetyList`), newest first. Errors: 400 `invalid_cursor`.
    public enum ListSafety: RPC {
        public static let type = "notification.list_safety"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var list: SafetyList
            public var page: PageRequest
            public init(userId: String, list: SafetyList, page: PageRequest) {
                self.userId = userId
                self.list = list
                self.page = page
            }
        }
        public typealias Reply = Page<UserSince>
    }

    /// Accepts or declines the pending follow request of `username` to the private account of
    /// `userId`. Accepting makes the follow (counts change, `notification.follow.changed`, the
    /// requester gets a `follow_accepted` notification and the owner's `follow_request` one
    /// becomes a `follow`); declining removes the request and its notification. Errors: 404
    /// `not_found` (no such user, or no request pending: withdrawn or answered already).
    public enum AnswerFollowRequest: RPC {
        public static let type = "notification.answer_follow_request"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            public var userId: String
            public var username: String
            public var accept: Bool
            public init(userId: String, username: String, accept: Bool) {
                self.userId = userId
                self.username = username
                self.accept = accept
            }
        }
        public typealias Reply = Empty
    }

    /// `username` no longer follows `userId` (both counts change); nobody is notified, and their
    /// follow notification goes. Idempotent. Errors: 404 `not_found`.
    public enum RemoveFollower: RPC {
        public static let type = "notification.remove_follower"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var username: String
            public init(userId: String, username: String) {
                self.userId = userId
                self.username = username
            }
        }
        public typealias Reply = Empty
    }

    /// A block was made (`blocking`) or lifted; ProfileService keeps the pairs to refuse what the
    /// blocked user asks of the blocker (a grid, a post, a like, a comment, a tag).
    public struct BlockChanged: Event, Equatable {
        public static let type = "notification.block.changed"
        public var blockerId: String
        public var blockedId: String
        public var blocking: Bool
        public init(blockerId: String, blockedId: String, blocking: Bool) {
            self.blockerId = blockerId
            self.blockedId = blockedId
            self.blocking = blocking
        }
    }
}
