import Messages

extension PostsController {
    /// `DELETE /v1/posts/{id}/comments/{commentId}` → 204, for the comment's author or the post's
    /// owner (ProfileService decides: 403 `forbidden` for anyone else, 404 for an unknown post or
    /// comment, also one already deleted). Its notification, group entry and badge count go once
    /// NotificationService has applied `profile.comment.deleted`.
    func deleteComment(_ request: Request) async throws -> HTTPResponse {
        _ = try await profile.call(
            Profile.DeleteComment.self,
            .init(
                userId: try request.userId, postId: try request.parameters.require("id"),
                commentId: try request.parameters.require("commentId")))
        return HTTPResponse(status: 204)
    }
}
