import Wire

extension Profile {
    /// Deletes a comment (API.md "Privacy and safety": `DELETE /v1/posts/{id}/comments/{commentId}`):
    /// its author or the post's owner may; the post's `commentCount` goes down in the same
    /// transaction, and `profile.comment.deleted` tells NotificationService to remove the
    /// comment's notification. Errors: 404 `not_found` for an unknown post, or a comment that is
    /// not on that post or is already deleted (so a repeat is 404); 403 `forbidden` for anyone
    /// else. Retried like `DeletePost`: a repeat changes nothing.
    public enum DeleteComment: RPC {
        public static let type = "profile.delete_comment"
        public static let isIdempotent = true
        public struct Request: Codable, Sendable {
            /// The caller.
            public var userId: String
            public var postId: String
            public var commentId: String
            public init(userId: String, postId: String, commentId: String) {
                self.userId = userId
                self.postId = postId
                self.commentId = commentId
            }
        }
        public typealias Reply = Empty
    }

    /// A comment was deleted, by its author or by the post's owner (only on a real deletion;
    /// the comments of a deleted post go with `profile.post.deleted`).
    public struct CommentDeleted: Event {
        public static let type = "profile.comment.deleted"
        public var postId: String
        /// The post's owner: the recipient of the comment's notification.
        public var ownerId: String
        /// The comment's author: the actor of its notification.
        public var userId: String
        public var commentId: String
        /// Who deleted it: `userId` or `ownerId`.
        public var deletedBy: String
        public init(postId: String, ownerId: String, userId: String, commentId: String, deletedBy: String) {
            self.postId = postId
            self.ownerId = ownerId
            self.userId = userId
            self.commentId = commentId
            self.deletedBy = deletedBy
        }
    }
}
