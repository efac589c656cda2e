import Messages

/// Posts, likes and comments (ProfileService; follow states from NotificationService).
struct PostsController: Controller {
    let profile: any ServiceBackend
    let notification: any ServiceBackend

    func register(_ routes: inout RouteCollection) {
        routes.add(.post, "/v1/posts", body: .json) { try await create($0) }
        routes.add(.get, "/v1/posts/{id}") { request in
            try .json(
                try await profile.call(
                    Profile.GetPost.self, .init(viewerId: try request.userId, postId: try request.parameters.require("id"))))
        }
        routes.add(.delete, "/v1/posts/{id}") { request in
            _ = try await profile.call(
                Profile.DeletePost.self, .init(userId: try request.userId, postId: try request.parameters.require("id")))
            return HTTPResponse(status: 204)
        }
        routes.add(.put, "/v1/posts/{id}/like") { try await like($0, true) }
        routes.add(.delete, "/v1/posts/{id}/like") { try await like($0, false) }
        routes.add(.get, "/v1/posts/{id}/likes") { try await likes($0) }
        routes.add(.get, "/v1/posts/{id}/comments") { request in
            try .json(
                try await profile.call(
                    Profile.ListComments.self,
                    .init(
                        postId: try request.parameters.require("id"), page: try request.page(),
                        viewerId: try request.userId)))
        }
        routes.add(.post, "/v1/posts/{id}/comments", body: .json) { try await comment($0) }
        routes.add(.delete, "/v1/posts/{id}/comments/{commentId}") { try await deleteComment($0) }
    }

    /// `POST /v1/posts` `{postType, mediaURL, thumbnailURL, caption?, taggedUsernames?}` or
    /// `{postType, mediaId, caption?, taggedUsernames?}` (the caller's own upload, else 404) → 201 `Post`.
    /// With an `Idempotency-Key` (API.md "Idempotent writes"), ProfileService answers a repeat
    /// with the first post, so the call may be sent again after a lost connection.
    func create(_ request: Request) async throws -> HTTPResponse {
        let key = try request.idempotencyKey()
        let post: Profile.Post
        switch try request.decode(CreatePostBody.self) {
        case .upload(let body):
            post = try await profile.call(
                Profile.CreateMediaPost.self,
                .init(
                    ownerId: try request.userId, postType: body.postType, mediaId: body.mediaId, caption: body.caption,
                    taggedUsernames: body.taggedUsernames ?? [], idempotencyKey: key),
                idempotent: key != nil)
        case .urls(let body):
            post = try await profile.call(
                Profile.CreatePost.self,
                .init(
                    ownerId: try request.userId, postType: body.postType, mediaURL: body.mediaURL,
                    thumbnailURL: body.thumbnailURL, caption: body.caption, taggedUsernames: body.taggedUsernames ?? [],
                    idempotencyKey: key),
                idempotent: key != nil)
        }
        return try .json(201, post)
    }

    /// `POST /v1/posts/{id}/comments` `{text}` → 201 `Comment`; an `Idempotency-Key` as for `create`.
    func comment(_ request: Request) async throws -> HTTPResponse {
        let key = try request.idempotencyKey()
        let body = try request.decode(CommentBody.self)
        return try .json(
            201,
            try await profile.call(
                Profile.AddComment.self,
                .init(
                    userId: try request.userId, postId: try request.parameters.require("id"), text: body.text,
                    idempotencyKey: key),
                idempotent: key != nil))
    }

    /// `PUT|DELETE /v1/posts/{id}/like` → `{liked, likeCount}`.
    func like(_ request: Request, _ liked: Bool) async throws -> HTTPResponse {
        try .json(
            try await profile.call(
                Profile.SetLike.self,
                .init(userId: try request.userId, postId: try request.parameters.require("id"), liked: liked)))
    }

    /// `GET /v1/posts/{id}/likes` → page of `{user, followState}`.
    func likes(_ request: Request) async throws -> HTTPResponse {
        let viewer = try request.userId
        let likes = try await profile.call(
            Profile.ListLikes.self,
            .init(postId: try request.parameters.require("id"), page: try request.page(), viewerId: viewer))
        var states: [String: FollowState] = [:]
        if !likes.items.isEmpty {
            states = try await notification.call(
                Notifications.FollowStates.self, .init(viewerId: viewer, userIds: likes.items.map(\.id))
            ).states
        }
        return try .json(
            PageShape(
                items: likes.items.map { u in
                    UserEntryShape(user: u, followState: states[u.id] ?? (viewer == u.id ? .self : .notFollowing))
                }, nextCursor: likes.nextCursor))
    }

    /// `POST /v1/posts`'s body: an uploaded medium's id (`mediaId` present, even `null`) or the
    /// media's URLs; each shape refuses the other's members.
    enum CreatePostBody: Decodable {
        case upload(UploadPost)
        case urls(URLPost)

        /// `{postType, mediaId, caption?, taggedUsernames?}`: the caller's own upload.
        struct UploadPost: Decodable {
            var postType: String
            var mediaId: String
            var caption: String?
            var taggedUsernames: [String]?
        }

        /// `{postType, mediaURL, thumbnailURL, caption?, taggedUsernames?}`.
        struct URLPost: Decodable {
            var postType: String
            var mediaURL: String
            var thumbnailURL: String
            var caption: String?
            var taggedUsernames: [String]?
        }

        init(from decoder: any Decoder) throws {
            let members = try decoder.container(keyedBy: MemberName.self)
            if members.contains(MemberName("mediaId")) {
                self = .upload(try UploadPost(from: decoder))
            } else {
                self = .urls(try URLPost(from: decoder))
            }
        }
    }

    /// `POST /v1/posts/{id}/comments`'s body.
    struct CommentBody: Decodable {
        var text: String
    }
}
