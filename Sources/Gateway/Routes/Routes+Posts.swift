import Foundation
import Shared

/// Posts, likes and comments (ProfileService; follow states from NotificationService).
extension Gateway {
    /// `POST /v1/posts` `{postType, mediaURL, thumbnailURL, caption?, taggedUsernames?}` → 201 `Post`.
    func createPost(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["postType", "mediaURL", "thumbnailURL", "caption", "taggedUsernames"])
        let postType = try body.string("postType")
        let mediaURL = try body.string("mediaURL")
        let thumbnailURL = try body.string("thumbnailURL")
        let caption = try body.optionalString("caption")
        let tagged = try body.optionalStrings("taggedUsernames") ?? []
        guard ["photo", "video"].contains(postType) else {
            throw Problem.invalidField("postType", "must be photo or video")
        }
        for (key, url) in [("mediaURL", mediaURL), ("thumbnailURL", thumbnailURL)]
        where !Self.isHTTPURL(url) {
            throw Problem.invalidField(key, "must be an absolute http(s) URL", code: "invalid_url")
        }
        if let caption, caption.count > 2_200 {
            throw Problem.invalidField("caption", "must be at most 2200 characters")
        }
        if tagged.count > 20 {
            throw Problem.invalidField("taggedUsernames", "must name at most 20 users")
        }
        let post = try await profile.call(
            Profile.CreatePost.self,
            .init(
                ownerId: call.userId, postType: postType, mediaURL: mediaURL, thumbnailURL: thumbnailURL,
                caption: caption,
                taggedUsernames: tagged))
        return reply(201, Shapes.post(post))
    }

    /// `GET /v1/posts/{id}` → `Post`.
    func getPost(_ call: Call) async throws -> HTTPResponse {
        reply(
            200,
            Shapes.post(
                try await profile.call(
                    Profile.GetPost.self, .init(viewerId: call.userId, postId: call.param("id")))))
    }

    /// `DELETE /v1/posts/{id}` → 204; 403 unless the caller owns it.
    func deletePost(_ call: Call) async throws -> HTTPResponse {
        _ = try await profile.call(
            Profile.DeletePost.self, .init(userId: call.userId, postId: call.param("id")))
        return HTTPResponse(status: 204)
    }

    /// `PUT|DELETE /v1/posts/{id}/like` → `{liked, likeCount}`.
    func setLike(_ call: Call, liked: Bool) async throws -> HTTPResponse {
        let r = try await profile.call(
            Profile.SetLike.self, .init(userId: call.userId, postId: call.param("id"), liked: liked))
        return reply(200, ["liked": r.liked, "likeCount": r.likeCount])
    }

    /// `GET /v1/posts/{id}/likes` → page of `{user, followState}`: one `profile.list_likes`, then
    /// one `graph.follow_states`.
    func listLikes(_ call: Call) async throws -> HTTPResponse {
        let page = try call.page()
        let likes = try await profile.call(
            Profile.ListLikes.self, .init(postId: call.param("id"), page: page))
        var states: [String: FollowState] = [:]
        if !likes.items.isEmpty {
            states = try await graph.call(
                Graph.FollowStates.self, .init(viewerId: call.userId, userIds: likes.items.map(\.id))
            ).states
        }
        let items = likes.items.map { u in
            Shapes.userEntry(u, states[u.id] ?? Shapes.fallbackState(viewer: call.userId, userId: u.id))
        }
        return reply(200, Shapes.page(items, nextCursor: likes.nextCursor))
    }

    /// `GET /v1/posts/{id}/comments` → page of `Comment`, oldest first.
    func listComments(_ call: Call) async throws -> HTTPResponse {
        let page = try call.page()
        let comments = try await profile.call(
            Profile.ListComments.self, .init(postId: call.param("id"), page: page))
        return reply(
            200, Shapes.page(comments.items.map(Shapes.comment), nextCursor: comments.nextCursor))
    }

    /// `POST /v1/posts/{id}/comments` `{text}` (1–2,200 characters) → 201 `Comment`.
    func addComment(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["text"])
        let text = try body.string("text")
        guard (1...2_200).contains(text.count),
            !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        else {
            throw Problem.invalidField("text", "must be 1 to 2200 characters")
        }
        let comment = try await profile.call(
            Profile.AddComment.self, .init(userId: call.userId, postId: call.param("id"), text: text))
        return reply(201, Shapes.comment(comment))
    }

    /// Whether `s` is an absolute `http` or `https` URL with a host.
    static func isHTTPURL(_ s: String) -> Bool {
        guard let url = URL(string: s), let scheme = url.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            let host = url.host, !host.isEmpty
        else { return false }
        return true
    }
}
