import Wire

/// ProfileService's messages: profiles, posts, likes, comments, tags, settings.
/// Producer name for events: `profile`.
public enum Profile {
    /// The API's `Post`.
    public struct Post: Codable, Sendable, Equatable {
        public var id: String
        public var owner: PublicUser
        /// `photo` or `video`.
        public var postType: String
        public var mediaURL: String
        public var thumbnailURL: String
        public var caption: String
        public var taggedUsers: [PublicUser]
        public var likeCount: Int
        public var commentCount: Int
        public var likedByMe: Bool
        /// RFC 3339.
        public var createdAt: String
        public init(
            id: String, owner: PublicUser, postType: String, mediaURL: String, thumbnailURL: String, caption: String,
            taggedUsers: [PublicUser], likeCount: Int, commentCount: Int, likedByMe: Bool, createdAt: String
        ) {
            self.id = id
            self.owner = owner
            self.postType = postType
            self.mediaURL = mediaURL
            self.thumbnailURL = thumbnailURL
            self.caption = caption
            self.taggedUsers = taggedUsers
            self.likeCount = likeCount
            self.commentCount = commentCount
            self.likedByMe = likedByMe
            self.createdAt = createdAt
        }
    }

    /// The API's `Comment`.
    public struct Comment: Codable, Sendable, Equatable {
        public var id: String
        public var postId: String
        public var author: PublicUser
        public var text: String
        public var createdAt: String
        public init(id: String, postId: String, author: PublicUser, text: String, createdAt: String) {
            self.id = id
            self.postId = postId
            self.author = author
            self.text = text
            self.createdAt = createdAt
        }
    }

    /// Creates the profile of a newly registered account (called by the gateway right after
    /// `auth.register`; idempotent). Errors: 400 with `fields` for a bad `birthDate` or `gender`.
    public enum CreateProfile: RPC {
        public static let type = "profile.create"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var identity: Identity
            public var name: String?
            public var birthDate: String?
            public var gender: String?
            public init(identity: Identity, name: String?, birthDate: String?, gender: String?) {
                self.identity = identity
                self.name = name
                self.birthDate = birthDate
                self.gender = gender
            }
        }
        public typealias Reply = Me
    }

    /// Checks a registration's profile fields against ProfileService's rules without storing
    /// anything (nil = not checked), so the gateway can report every field error of a
    /// registration before the account is created. Errors: 400 with `fields`.
    public enum CheckProfileFields: RPC {
        public static let type = "profile.check_fields"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var name: String?
            public var birthDate: String?
            public var gender: String?
            public init(name: String?, birthDate: String?, gender: String?) {
                self.name = name
                self.birthDate = birthDate
                self.gender = gender
            }
        }
        public typealias Reply = Empty
    }

    /// The caller's own profile. Errors: 404.
    public enum GetMe: RPC {
        public static let type = "profile.get_me"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public init(userId: String) { self.userId = userId }
        }
        public typealias Reply = Me
    }

    /// A partial update of the caller's profile. `username`/`email` changes go through
    /// `auth.change_identity`. Errors: 400 with `fields`, 409 `username_taken` / `email_taken`.
    public enum UpdateMe: RPC {
        public static let type = "profile.update_me"
        public static let isIdempotent = true
        /// Each field: absent = unchanged. `phone`, `gender`, `birthDate`, `profilePhotoURL` may be
        /// cleared with `clear: ["phone", ...]`.
        public struct Request: Codable, Sendable {
            public var userId: String
            public var name: String?
            public var username: String?
            public var bio: String?
            public var profilePhotoURL: String?
            public var email: String?
            public var phone: String?
            public var gender: String?
            public var birthDate: String?
            /// A private account or not (nil: left as it is); API.md "Privacy and safety".
            public var isPrivate: Bool?
            public var clear: [String]
            public init(
                userId: String, name: String? = nil, username: String? = nil, bio: String? = nil,
                profilePhotoURL: String? = nil, email: String? = nil, phone: String? = nil, gender: String? = nil,
                birthDate: String? = nil, isPrivate: Bool? = nil, clear: [String] = []
            ) {
                self.isPrivate = isPrivate
                self.userId = userId
                self.name = name
                self.username = username
                self.bio = bio
                self.profilePhotoURL = profilePhotoURL
                self.email = email
                self.phone = phone
                self.gender = gender
                self.birthDate = birthDate
                self.clear = clear
            }
        }
        public typealias Reply = Me
    }

    /// The edit-profile form: `{profilePhotoURL, sections: [{title, fields: [{key, label, placeholder, value}]}]}`.
    public enum EditForm: RPC {
        public static let type = "profile.edit_form"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public init(userId: String) { self.userId = userId }
        }
        public struct Field: Codable, Sendable, Equatable {
            public var key: String
            public var label: String
            public var placeholder: String
            public var value: String?
            public init(key: String, label: String, placeholder: String, value: String?) {
                self.key = key
                self.label = label
                self.placeholder = placeholder
                self.value = value
            }
        }
        public struct Section: Codable, Sendable, Equatable {
            public var title: String
            public var fields: [Field]
            public init(title: String, fields: [Field]) {
                self.title = title
                self.fields = fields
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var profilePhotoURL: String?
            public var sections: [Section]
            public init(profilePhotoURL: String?, sections: [Section]) {
                self.profilePhotoURL = profilePhotoURL
                self.sections = sections
            }
        }
    }

    /// The profile header's ProfileService half: the user and their post count. Errors: 404.
    public enum Header: RPC {
        public static let type = "profile.header"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var username: String
            /// Who asks (nil: an older gateway): a user who blocks them is not found for them.
            public var viewerId: String?
            public init(username: String, viewerId: String? = nil) {
                self.username = username
                self.viewerId = viewerId
            }
        }
        public struct Reply: Codable, Sendable {
            public var user: PublicUser
            public var postCount: Int
            public init(user: PublicUser, postCount: Int) {
                self.user = user
                self.postCount = postCount
            }
        }
    }

    /// Batch lookup of public users by id (unknown ids left out). For enriching lists.
    public enum UsersByIds: RPC {
        public static let type = "profile.users_by_ids"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var ids: [String]
            public init(ids: [String]) { self.ids = ids }
        }
        public struct Reply: Codable, Sendable {
            public var users: [PublicUser]
            public init(users: [PublicUser]) { self.users = users }
        }
    }

    /// Creates a post. Errors: 400 with `fields` (`postType`, `mediaURL`, `thumbnailURL`,
    /// `caption` over 2,200 characters, `taggedUsernames` naming an unknown user); with an
    /// `idempotencyKey`, 422 `idempotency_key_reused` and 409 `idempotency_key_in_use`.
    public enum CreatePost: RPC {
        public static let type = "profile.create_post"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            public var ownerId: String
            public var postType: String
            public var mediaURL: String
            public var thumbnailURL: String
            public var caption: String?
            public var taggedUsernames: [String]
            /// The caller's `Idempotency-Key` (`IdempotencyKey`), nil without one: a repeat with
            /// the same key within 24 h gets the first reply and stores nothing, a different
            /// request with it is 422 `idempotency_key_reused`, one while the first is being
            /// processed 409 `idempotency_key_in_use`. Absent on the wire when nil.
            public var idempotencyKey: String?
            public init(
                ownerId: String, postType: String, mediaURL: String, thumbnailURL: String, caption: String?,
                taggedUsernames: [String], idempotencyKey: String? = nil
            ) {
                self.ownerId = ownerId
                self.postType = postType
                self.mediaURL = mediaURL
                self.thumbnailURL = thumbnailURL
                self.caption = caption
                self.taggedUsernames = taggedUsernames
                self.idempotencyKey = idempotencyKey
            }
        }
        public typealias Reply = Post
    }

    /// One post as seen by `viewerId` (for `likedByMe`). Errors: 404.
    public enum GetPost: RPC {
        public static let type = "profile.get_post"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var viewerId: String
            public var postId: String
            public init(viewerId: String, postId: String) {
                self.viewerId = viewerId
                self.postId = postId
            }
        }
        public typealias Reply = Post
    }

    /// Deletes a post. Errors: 404, 403 `forbidden` unless `userId` owns it.
    public enum DeletePost: RPC {
        public static let type = "profile.delete_post"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var postId: String
            public init(userId: String, postId: String) {
                self.userId = userId
                self.postId = postId
            }
        }
        public typealias Reply = Empty
    }

    /// A user's posts (the grid, newest first) or the posts they are tagged in (the tagged tab).
    /// Errors: 404 for an unknown username, 400 `invalid_cursor`.
    public enum ListPosts: RPC {
        public static let type = "profile.list_posts"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var viewerId: String
            public var username: String
            /// `true` for the tagged tab.
            public var tagged: Bool
            public var page: PageRequest
            public init(viewerId: String, username: String, tagged: Bool, page: PageRequest) {
                self.viewerId = viewerId
                self.username = username
                self.tagged = tagged
                self.page = page
            }
        }
        public typealias Reply = Page<Post>
    }

    /// Likes or unlikes a post; idempotent. Errors: 404.
    public enum SetLike: RPC {
        public static let type = "profile.set_like"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var postId: String
            public var liked: Bool
            public init(userId: String, postId: String, liked: Bool) {
                self.userId = userId
                self.postId = postId
                self.liked = liked
            }
        }
        public struct Reply: Codable, Sendable, Equatable {
            public var liked: Bool
            public var likeCount: Int
            public init(liked: Bool, likeCount: Int) {
                self.liked = liked
                self.likeCount = likeCount
            }
        }
    }

    /// The users who liked a post, newest like first. Errors: 404.
    public enum ListLikes: RPC {
        public static let type = "profile.list_likes"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var postId: String
            public var page: PageRequest
            /// Who reads (nil: an older gateway): the post's visibility is theirs, and users who
            /// block them or whom they block are left out (API.md "Privacy and safety").
            public var viewerId: String?
            public init(postId: String, page: PageRequest, viewerId: String? = nil) {
                self.viewerId = viewerId
                self.postId = postId
                self.page = page
            }
        }
        public typealias Reply = Page<PublicUser>
    }

    /// A post's comments, oldest first. Errors: 404.
    public enum ListComments: RPC {
        public static let type = "profile.list_comments"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var postId: String
            public var page: PageRequest
            /// Who reads (nil: an older gateway): the post's visibility is theirs, and users who
            /// block them or whom they block are left out (API.md "Privacy and safety").
            public var viewerId: String?
            public init(postId: String, page: PageRequest, viewerId: String? = nil) {
                self.viewerId = viewerId
                self.postId = postId
                self.page = page
            }
        }
        public typealias Reply = Page<Comment>
    }

    /// Adds a comment (1–2,200 characters). Errors: 404, 400 with `fields` (`text`); with an
    /// `idempotencyKey`, those of `CreatePost`'s key.
    public enum AddComment: RPC {
        public static let type = "profile.add_comment"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            public var userId: String
            public var postId: String
            public var text: String
            /// The caller's `Idempotency-Key` (`IdempotencyKey`), nil without one: a repeat with
            /// the same key within 24 h gets the first reply and stores nothing, a different
            /// request with it is 422 `idempotency_key_reused`, one while the first is being
            /// processed 409 `idempotency_key_in_use`. Absent on the wire when nil.
            public var idempotencyKey: String?
            public init(userId: String, postId: String, text: String, idempotencyKey: String? = nil) {
                self.userId = userId
                self.postId = postId
                self.text = text
                self.idempotencyKey = idempotencyKey
            }
        }
        public typealias Reply = Comment
    }

    /// The settings screen: `{sections: [{title, items: [{id, title, action}]}]}`.
    public struct Settings: Codable, Sendable, Equatable {
        public struct Action: Codable, Sendable, Equatable {
            /// `edit_profile`, `share`, `toggle`, `open_url` or `logout`.
            public var type: String
            public var text: String?
            public var url: String?
            public var value: Bool?
            public var confirmTitle: String?
            public var confirmMessage: String?
            public init(
                type: String, text: String? = nil, url: String? = nil, value: Bool? = nil,
                confirmTitle: String? = nil, confirmMessage: String? = nil
            ) {
                self.type = type
                self.text = text
                self.url = url
                self.value = value
                self.confirmTitle = confirmTitle
                self.confirmMessage = confirmMessage
            }
        }
        public struct Item: Codable, Sendable, Equatable {
            public var id: String
            public var title: String
            public var action: Action
            public init(id: String, title: String, action: Action) {
                self.id = id
                self.title = title
                self.action = action
            }
        }
        public struct Section: Codable, Sendable, Equatable {
            public var title: String
            public var items: [Item]
            public init(title: String, items: [Item]) {
                self.title = title
                self.items = items
            }
        }
        public var sections: [Section]
        public init(sections: [Section]) { self.sections = sections }
    }

    /// Reads the caller's settings.
    public enum GetSettings: RPC {
        public static let type = "profile.get_settings"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public init(userId: String) { self.userId = userId }
        }
        public typealias Reply = Settings
    }

    /// Changes the caller's settings (`saveOriginalPosts`).
    public enum UpdateSettings: RPC {
        public static let type = "profile.update_settings"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            public var userId: String
            public var saveOriginalPosts: Bool
            public init(userId: String, saveOriginalPosts: Bool) {
                self.userId = userId
                self.saveOriginalPosts = saveOriginalPosts
            }
        }
        public typealias Reply = Settings
    }

    // MARK: Events

    /// A post was created; `taggedUserIds` excludes nobody (the consumer skips self-tags).
    public struct PostCreated: Event {
        public static let type = "profile.post.created"
        public var postId: String
        public var ownerId: String
        public var thumbnailURL: String
        public var taggedUserIds: [String]
        public var createdAt: String
        /// The owner's public fields as ProfileService held them when it wrote the event (the
        /// actor of the `tag` and `post` notifications, shown on live streams without asking
        /// ProfileService again); absent in events written before it was added.
        public var owner: PublicUser?
        public init(
            postId: String, ownerId: String, thumbnailURL: String, taggedUserIds: [String], createdAt: String,
            owner: PublicUser? = nil
        ) {
            self.postId = postId
            self.ownerId = ownerId
            self.thumbnailURL = thumbnailURL
            self.taggedUserIds = taggedUserIds
            self.createdAt = createdAt
            self.owner = owner
        }
    }

    /// A post was deleted (its likes, comments and tags with it).
    public struct PostDeleted: Event {
        public static let type = "profile.post.deleted"
        public var postId: String
        public var ownerId: String
        public init(postId: String, ownerId: String) {
            self.postId = postId
            self.ownerId = ownerId
        }
    }

    /// A like was added (`liked: true`, type `profile.post.liked`) — only on a real change.
    public struct PostLiked: Event {
        public static let type = "profile.post.liked"
        public var postId: String
        public var ownerId: String
        public var userId: String
        public var thumbnailURL: String
        /// `photo` or `video`; absent in events written before it was added (read as `photo`).
        public var postType: String?
        /// The liker's public fields as ProfileService held them when it wrote the event (the
        /// notification's actor, shown on live streams without asking ProfileService again);
        /// absent in events written before it was added.
        public var user: PublicUser?
        public init(
            postId: String, ownerId: String, userId: String, thumbnailURL: String, postType: String? = nil,
            user: PublicUser? = nil
        ) {
            self.postId = postId
            self.ownerId = ownerId
            self.userId = userId
            self.thumbnailURL = thumbnailURL
            self.postType = postType
            self.user = user
        }
    }

    /// A like was removed — only on a real change.
    public struct PostUnliked: Event {
        public static let type = "profile.post.unliked"
        public var postId: String
        public var ownerId: String
        public var userId: String
        public init(postId: String, ownerId: String, userId: String) {
            self.postId = postId
            self.ownerId = ownerId
            self.userId = userId
        }
    }

    /// A comment was added.
    public struct PostCommented: Event {
        public static let type = "profile.post.commented"
        public var postId: String
        public var ownerId: String
        public var userId: String
        public var commentId: String
        public var text: String
        public var thumbnailURL: String
        /// The commenter's public fields as ProfileService held them when it wrote the event
        /// (see `PostLiked.user`); absent in events written before it was added.
        public var user: PublicUser?
        public init(
            postId: String, ownerId: String, userId: String, commentId: String, text: String, thumbnailURL: String,
            user: PublicUser? = nil
        ) {
            self.postId = postId
            self.ownerId = ownerId
            self.userId = userId
            self.commentId = commentId
            self.text = text
            self.thumbnailURL = thumbnailURL
            self.user = user
        }
    }

    /// A profile was created, or its public fields changed (name, bio, photo, or username via
    /// identity). NotificationService keeps the fields an actor is shown with from these.
    public struct ProfileChanged: Event {
        public static let type = "profile.user.changed"
        public var user: PublicUser
        public init(user: PublicUser) { self.user = user }
    }
}
