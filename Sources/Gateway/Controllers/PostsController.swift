import Messages

/// Posts, likes and comments (ProfileService; follow states from NotificationService).
struct PostsController: Controller {
    let profile: Backend
    let notification: Backend

    func register(_ routes: inout RouteCollection) {
        routes.add("POST", "/v1/posts", json: true) { try await create($0) }
        routes.add("GET", "/v1/posts/{id}") { request in
            try .json(
                try await profile.call(
                    Profile.GetPost.self, .init(viewerId: try request.userId, postId: try request.parameters.require("id"))))
        }
        routes.add("DELETE", "/v1/posts/{id}") { request in
            _ = try await profile.call(
                Profile.DeletePost.self, .init(userId: try request.userId, postId: try request.parameters.require("id")))
            return HTTPResponse(status: 204)
        }
        routes.add("PUT", "/v1/posts/{id}/like") { try await like($0, true) }
        routes.add("DELETE", "/v1/posts/{id}/like") { try await like($0, false) }
        routes.add("GET", "/v1/posts/{id}/likes") { try await likes($0) }
        routes.add("GET", "/v1/posts/{id}/comments") { request in
            try .json(
                try await profile.call(
                    Profile.ListComments.self, .init(postId: try request.parameters.require("id"), page: try request.page())))
        }
        routes.add("POST", "/v1/posts/{id}/comments", json: true) { try await comment($0) }
    }

    /// `POST /v1/posts` `{postType, mediaURL, thumbnailURL, caption?, taggedUsernames?}` or
    /// `{postType, mediaId, caption?, taggedUsernames?}` (the caller's own upload, else 404) → 201 `Post`.
    /// With an `Idempotency-Key` (API.md "Idempotent writes"), ProfileService answers a repeat
    /// with the first post, so the call may be sent again after a lost connection.
    func create(_ request: Request) async throws -> HTTPResponse {
        let key = try request.idempotencyKey()
        let body = try request.body()
        if body.has("mediaId") {
            try body.allowOnly(["postType", "mediaId", "caption", "taggedUsernames"])
            let post = try await profile.call(
                Profile.CreateMediaPost.self,
                .init(
                    ownerId: try request.userId, postType: try body.string("postType"), mediaId: try body.string("mediaId"),
                    caption: try body.optionalString("caption"),
                    taggedUsernames: try body.optionalStrings("taggedUsernames") ?? [], idempotencyKey: key),
                idempotent: key != nil)
            return try .json(201, post)
        }
        try body.allowOnly(["postType", "mediaURL", "thumbnailURL", "caption", "taggedUsernames"])
        let post = try await profile.call(
            Profile.CreatePost.self,
            .init(
                ownerId: try request.userId, postType: try body.string("postType"), mediaURL: try body.string("mediaURL"),
                thumbnailURL: try body.string("thumbnailURL"), caption: try body.optionalString("caption"),
                taggedUsernames: try body.optionalStrings("taggedUsernames") ?? [], idempotencyKey: key),
            idempotent: key != nil)
        return try .json(201, post)
    }

    /// `POST /v1/posts/{id}/comments` `{text}` → 201 `Comment`; an `Idempotency-Key` as for `create`.
    func comment(_ request: Request) async throws -> HTTPResponse {
        let key = try request.idempotencyKey()
        let body = try request.body()
        try body.allowOnly(["text"])
        return try .json(
            201,
            try await profile.call(
                Profile.AddComment.self,
                .init(
                    userId: try request.userId, postId: try request.parameters.require("id"), text: try body.string("text"),
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
            Profile.ListLikes.self, .init(postId: try request.parameters.require("id"), page: try request.page()))
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
}
