import Wire

/// NotificationService's messages: the follow graph and notifications.
/// Producer name for events: `notification`.
public enum Notifications {
    /// Follows `username` (idempotent; `notifyPosts` nil keeps the current flag, default false).
    /// Errors: 404 `not_found`, 422 `cannot_follow_self`.
    public enum Follow: RPC {
        public static let type = "notification.follow"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var followerId: String
            public var username: String
            public var notifyPosts: Bool?
            public init(followerId: String, username: String, notifyPosts: Bool?) {
                self.followerId = followerId
                self.username = username
                self.notifyPosts = notifyPosts
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var followState: FollowState
            public var notifyPosts: Bool
            public init(followState: FollowState, notifyPosts: Bool) {
                self.followState = followState
                self.notifyPosts = notifyPosts
            }
        }
    }

    /// Unfollows `username` (idempotent). Errors: 404, 422 `cannot_follow_self`.
    public enum Unfollow: RPC {
        public static let type = "notification.unfollow"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var followerId: String
            public var username: String
            public init(followerId: String, username: String) {
                self.followerId = followerId
                self.username = username
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var followState: FollowState
            public init(followState: FollowState) { self.followState = followState }
        }
    }

    /// The profile header's NotificationService half: counts and the viewer's relation. Errors:
    /// 404 (an unknown user, or one who blocks the viewer).
    public enum Header: RPC {
        public static let type = "notification.header"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var viewerId: String
            public var username: String
            public init(viewerId: String, username: String) {
                self.viewerId = viewerId
                self.username = username
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var userId: String
            public var followers: Int
            public var following: Int
            public var followState: FollowState
            /// Whether the viewer blocks, mutes, and is followed by the user (all false for oneself).
            public var blocking: Bool
            public var muting: Bool
            public var followsYou: Bool
            public init(
                userId: String, followers: Int, following: Int, followState: FollowState, blocking: Bool = false,
                muting: Bool = false, followsYou: Bool = false
            ) {
                self.userId = userId
                self.followers = followers
                self.following = following
                self.followState = followState
                self.blocking = blocking
                self.muting = muting
                self.followsYou = followsYou
            }

            enum CodingKeys: String, CodingKey {
                case userId, followers, following, followState, blocking, muting, followsYou
            }

            /// Decodes the reply; the three relations false from a peer older than them.
            /// - Throws: `DecodingError`.
            public init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                userId = try c.decode(String.self, forKey: .userId)
                followers = try c.decode(Int.self, forKey: .followers)
                following = try c.decode(Int.self, forKey: .following)
                followState = try c.decode(FollowState.self, forKey: .followState)
                blocking = try c.decodeIfPresent(Bool.self, forKey: .blocking) ?? false
                muting = try c.decodeIfPresent(Bool.self, forKey: .muting) ?? false
                followsYou = try c.decodeIfPresent(Bool.self, forKey: .followsYou) ?? false
            }
        }
    }

    /// Makes many users follow one followee at once: a graph import (load tests, migrations),
    /// not the `notification.follow` a user makes. Creates the edges that do not exist yet (an existing
    /// edge keeps its `notifyPosts`) and moves `follow_counts` in the same transaction; makes no
    /// `follow` notifications; emits one `notification.follows.imported` per request that created
    /// edges. Idempotent. Not routed by the gateway.
    ///
    /// Ids are AuthService ids; ones the service's identity replica has not seen yet (it may lag
    /// behind an `auth.import_users` that just happened) are looked up at AuthService. Repeated
    /// follower ids count once.
    ///
    /// Errors (nothing written): 400 `invalid_request` (no follower ids, or more than
    /// `maxFollowers`, field `followerIds`), 404 `not_found` naming the unknown ids (fields
    /// `followeeId` / `followerIds[<index>]`, at most 100), 422 `cannot_follow_self` (field
    /// `followerIds[<index>]`), 503/504 when AuthService must be asked and cannot answer.
    public enum ImportFollows: RPC {
        public static let type = "notification.import_follows"
        public static let isIdempotent = true
        /// Most follower ids in one request.
        public static let maxFollowers = 10_000

        public struct Request: Codable, Sendable {
            public var followeeId: String
            public var followerIds: [String]
            /// The new edges' flag (new posts notify these followers).
            public var notifyPosts: Bool
            public init(followeeId: String, followerIds: [String], notifyPosts: Bool) {
                self.followeeId = followeeId
                self.followerIds = followerIds
                self.notifyPosts = notifyPosts
            }
        }

        public struct Reply: Codable, Sendable, Equatable {
            /// Edges created (the others existed already).
            public var created: Int
            public init(created: Int) { self.created = created }
        }
    }

    /// Devices of many users in one transaction, for load tests and migrations (`LoadTest push`
    /// registers a device for each of 100,000 followers without logging each one in). On
    /// NotificationService's RPC endpoint only, and only when imports are allowed
    /// (`ALLOW_IMPORTS`): the gateway has no route to it. A token already registered is left as it
    /// is. Each device belongs to a session like a registered one (a logout removes it; one of a
    /// session that ended is not made) and obeys the device cap (past 20 a user's oldest go).
    /// Errors: 403 `imports_disabled`, 400 `invalid_request` (count), 400 `invalid_field`
    /// (`devices[i].token`, `devices[i].environment`, `devices[i].sessionId`), 404 `not_found`
    /// (`devices[i].userId`).
    public enum ImportDevices: RPC {
        public static let type = "notification.import_devices"
        public static let isIdempotent = true
        /// Most devices in one request.
        public static let maxDevices = 10_000

        public struct Device: Codable, Sendable {
            public var userId: String
            /// The AuthService session the device belongs to (an imported session's id).
            public var sessionId: String
            /// Lowercase hex, 16...200 digits, even length (as `RegisterDevice`).
            public var token: String
            /// `sandbox` or `production`.
            public var environment: String
            /// As `RegisterDevice`'s.
            public var installationId: String?
            public init(userId: String, sessionId: String, token: String, environment: String, installationId: String? = nil) {
                self.userId = userId
                self.sessionId = sessionId
                self.token = token
                self.environment = environment
                self.installationId = installationId
            }
        }

        public struct Request: Codable, Sendable {
            public var devices: [Device]
            public init(devices: [Device]) { self.devices = devices }
        }

        public struct Reply: Codable, Sendable, Equatable {
            /// Devices created (the others' tokens were registered already).
            public var created: Int
            public init(created: Int) { self.created = created }
        }
    }

    /// A list entry: a user id and the viewer's follow state toward it.
    public struct Entry: Codable, Sendable, Equatable {
        public var userId: String
        public var followState: FollowState
        public init(userId: String, followState: FollowState) {
            self.userId = userId
            self.followState = followState
        }
    }

    /// Followers (`following: false`) or followees (`following: true`) of `username`, newest
    /// edge first. Errors: 404, 400 `invalid_cursor`.
    public enum ListEdges: RPC {
        public static let type = "notification.list_edges"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var viewerId: String
            public var username: String
            public var following: Bool
            public var page: PageRequest
            public init(viewerId: String, username: String, following: Bool, page: PageRequest) {
                self.viewerId = viewerId
                self.username = username
                self.following = following
                self.page = page
            }
        }
        public typealias Reply = Page<Entry>
    }

    /// The viewer's follow state toward many users at once (for enriching lists).
    public enum FollowStates: RPC {
        public static let type = "notification.follow_states"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var viewerId: String
            public var userIds: [String]
            public init(viewerId: String, userIds: [String]) {
                self.viewerId = viewerId
                self.userIds = userIds
            }
        }
        public struct Reply: Codable, Sendable {
            /// user id → state, one per requested id.
            public var states: [String: FollowState]
            public init(states: [String: FollowState]) { self.states = states }
        }
    }

    /// A notification as NotificationService stores it; the gateway replaces `actorId` with the
    /// actor's PublicUser and renders the text from the actor's *current* username
    /// (`NotificationText`), so a rename shows at once.
    ///
    /// On routed delivery (`NotificationRouting`) a notification may also carry `actor`: the
    /// actor's public fields as they were when the event that made it was written (ProfileService
    /// sends them with its likes, comments and posts), which the gateway shows as they are instead
    /// of asking ProfileService. Stored rows, `notification.list` and `notification.since` never
    /// carry it (they are read later, when the actor may have changed: the gateway looks it up).
    public struct Notification: Codable, Sendable, Equatable {
        public struct PostRef: Codable, Sendable, Equatable {
            public var id: String
            public var thumbnailURL: String
            public init(id: String, thumbnailURL: String) {
                self.id = id
                self.thumbnailURL = thumbnailURL
            }
        }
        public var id: String
        /// Strictly increasing per recipient.
        public var seq: Int64
        /// `like`, `follow`, `comment`, `tag` or `post` (`.unknown` from a newer peer).
        public var type: NotificationKind
        /// What the text needs besides the actor: the post type (`photo`, `video`) of a `like`,
        /// the comment's text of a `comment`; nil otherwise.
        public var detail: String?
        public var createdAt: String
        public var read: Bool
        public var actorId: String
        public var post: PostRef?
        /// Set for `follow`: the recipient's current relation to the actor.
        public var followState: FollowState?
        /// The actor (its `id` is `actorId`) as of the notification's event, on live delivery
        /// only; absent from older producers, for follows, and in everything read from storage.
        public var actor: PublicUser?
        public init(
            id: String, seq: Int64, type: NotificationKind, detail: String?, createdAt: String, read: Bool, actorId: String,
            post: PostRef?, followState: FollowState?, actor: PublicUser? = nil
        ) {
            self.id = id
            self.seq = seq
            self.type = type
            self.detail = detail
            self.createdAt = createdAt
            self.read = read
            self.actorId = actorId
            self.post = post
            self.followState = followState
            self.actor = actor
        }
    }

    /// A recipient's notifications, newest first, with the unread count.
    public enum ListNotifications: RPC {
        public static let type = "notification.list"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var recipientId: String
            public var page: PageRequest
            public init(recipientId: String, page: PageRequest) {
                self.recipientId = recipientId
                self.page = page
            }
        }
        public struct Reply: Codable, Sendable {
            public var items: [Notification]
            public var nextCursor: String?
            public var unreadCount: Int
            public init(items: [Notification], nextCursor: String?, unreadCount: Int) {
                self.items = items
                self.nextCursor = nextCursor
                self.unreadCount = unreadCount
            }
        }
    }

    /// Everything after `afterSeq`, oldest first, at most `limit` (for stream resume).
    public enum NotificationsSince: RPC {
        public static let type = "notification.since"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var recipientId: String
            public var afterSeq: Int64
            public var limit: Int
            public init(recipientId: String, afterSeq: Int64, limit: Int) {
                self.recipientId = recipientId
                self.afterSeq = afterSeq
                self.limit = limit
            }
        }
        public struct Reply: Codable, Sendable {
            public var items: [Notification]
            /// The recipient's newest seq (0 when none).
            public var headSeq: Int64
            public init(items: [Notification], headSeq: Int64) {
                self.items = items
                self.headSeq = headSeq
            }
        }
    }

    /// Marks read every notification with `seq <= upToSeq`, or with `all: true` every
    /// notification up to the head (then `upToSeq` is not read). The read mark never moves back.
    public enum MarkRead: RPC {
        public static let type = "notification.mark_read"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var recipientId: String
            public var upToSeq: Int64
            /// true: up to the recipient's head seq (absent in requests from older peers).
            public var all: Bool?
            public init(recipientId: String, upToSeq: Int64, all: Bool? = nil) {
                self.recipientId = recipientId
                self.upToSeq = upToSeq
                self.all = all
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var unreadCount: Int
            public init(unreadCount: Int) { self.unreadCount = unreadCount }
        }
    }

    /// A group of a recipient's notifications (API.md "Grouped notifications"): likes or
    /// comments on one post, follows of one UTC day, or a single `tag` / `post` notification.
    /// The gateway resolves `actorIds` and renders the text (`NotificationText.renderGroup`).
    public struct Group: Codable, Sendable, Equatable {
        /// `like:<postId>`, `comment:<postId>`, `follow:<YYYY-MM-DD>`, `tag:<notification id>`,
        /// `post:<notification id>` (`NotificationGroupKey`); opaque to clients.
        public var key: String
        public var type: NotificationKind
        /// Notifications in the group (1 for `tag` and `post`).
        public var count: Int
        /// The 3 newest distinct actors, newest first.
        public var actorIds: [String]
        /// A like group's post type (`photo`, `video`); nil otherwise.
        public var detail: String?
        public var post: Notification.PostRef?
        /// Set for a group of one `follow`: the recipient's current relation to the actor.
        public var followState: FollowState?
        /// The seq of the group's newest notification.
        public var latestSeq: Int64
        /// RFC 3339 time of the group's newest notification.
        public var latestAt: String
        /// `latestSeq` ≤ the read mark.
        public var read: Bool
        public init(
            key: String, type: NotificationKind, count: Int, actorIds: [String], detail: String?, post: Notification.PostRef?,
            followState: FollowState?, latestSeq: Int64, latestAt: String, read: Bool
        ) {
            self.key = key
            self.type = type
            self.count = count
            self.actorIds = actorIds
            self.detail = detail
            self.post = post
            self.followState = followState
            self.latestSeq = latestSeq
            self.latestAt = latestAt
            self.read = read
        }
    }

    /// A page of a recipient's notification groups, newest activity first, with the unread count.
    /// The cursor carries the position of the last group and the recipient's head seq when the
    /// first page was read (see the OpenAPI description of `GET /v1/notifications/groups`).
    /// Errors: 400 `invalid_cursor`.
    public enum ListGroups: RPC {
        public static let type = "notification.list_groups"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var recipientId: String
            public var page: PageRequest
            public init(recipientId: String, page: PageRequest) {
                self.recipientId = recipientId
                self.page = page
            }
        }
        public struct Reply: Codable, Sendable {
            public var items: [Group]
            public var nextCursor: String?
            public var unreadCount: Int
            public init(items: [Group], nextCursor: String?, unreadCount: Int) {
                self.items = items
                self.nextCursor = nextCursor
                self.unreadCount = unreadCount
            }
        }
    }

    /// The recipient's unread count (the badge), from stored counters.
    public enum UnreadCount: RPC {
        public static let type = "notification.unread_count"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var recipientId: String
            public init(recipientId: String) { self.recipientId = recipientId }
        }
        public typealias Reply = MarkRead.Reply
    }

    /// What a gateway needs before it subscribes to a recipient's notifications (see
    /// `NotificationRouting`): the recipient's compact key (its topic) and current head seq
    /// (0 when none). Errors: 404 `not_found` when AuthService does not know the user.
    public enum StreamStart: RPC {
        public static let type = "notification.stream_start"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var recipientId: String
            public init(recipientId: String) { self.recipientId = recipientId }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var recipientKey: Int64
            public var headSeq: Int64
            public init(recipientKey: Int64, headSeq: Int64) {
                self.recipientKey = recipientKey
                self.headSeq = headSeq
            }
        }
    }

    /// The head seq of each recipient (0 when none), in request order: how a gateway notices
    /// a notification it missed when nothing came after it. At most `maxKeys` keys; more →
    /// 400 `invalid_field` (`recipientKeys`).
    public enum Heads: RPC {
        public static let type = "notification.heads"
        public static let isIdempotent = true
        /// Most keys in one request.
        public static let maxKeys = 10_000
        public struct Request: Codable, Sendable {
            public var recipientKeys: [Int64]
            public init(recipientKeys: [Int64]) { self.recipientKeys = recipientKeys }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var heads: [Int64]
            public init(heads: [Int64]) { self.heads = heads }
        }
    }

    // MARK: Events

    /// A follow edge was created or removed (only on a real change).
    public struct FollowChanged: Event, Equatable {
        public static let type = "notification.follow.changed"
        public var followerId: String
        public var followeeId: String
        public var following: Bool
        public var notifyPosts: Bool
        public init(followerId: String, followeeId: String, following: Bool, notifyPosts: Bool) {
            self.followerId = followerId
            self.followeeId = followeeId
            self.following = following
            self.notifyPosts = notifyPosts
        }
    }

    /// Edges created by one `notification.import_follows` request (only the ones it created, in
    /// request order), all toward `followeeId` with the same `notifyPosts`.
    public struct FollowsImported: Event, Equatable {
        public static let type = "notification.follows.imported"
        public var followeeId: String
        public var followerIds: [String]
        public var notifyPosts: Bool
        public init(followeeId: String, followerIds: [String], notifyPosts: Bool) {
            self.followeeId = followeeId
            self.followerIds = followerIds
            self.notifyPosts = notifyPosts
        }
    }
}
