import Messages
import Storage
import Wire

extension SQLEngagementStore {
    func deleteComment(postId: String, commentId: String, by userId: String) async throws {
        try await database.write { tx in try Self.deleteComment(postId: postId, commentId: commentId, by: userId, in: tx) }
    }

    /// `deleteComment` in `tx`: checks, deletes, lowers the count and emits the event. Another
    /// replica's transaction deleting the same comment makes this one's `DELETE` wait for it and
    /// then find nothing (PostgreSQL's READ COMMITTED re-reads the row): 404, and neither the
    /// count nor the event is repeated.
    /// - Throws: 404, 403 `forbidden` (see `EngagementStore.deleteComment`), the engine's error.
    static func deleteComment(postId: String, commentId: String, by userId: String, in tx: Transaction) throws {
        guard let post = try PostRecord.byId(postId, on: tx.connection) else { throw ServiceError.notFound("post") }
        guard
            let comment = try tx.connection.queryOne(
                "SELECT seq, user_id FROM comments WHERE id = \(commentId) AND post_seq = \(post.seq)")
        else { throw ServiceError.notFound("comment") }
        let seq = try comment.int64("seq")
        let authorId = try comment.string("user_id")
        guard userId == authorId || userId == post.ownerId else {
            throw ServiceError.forbidden("only the comment's author or the post's owner can delete a comment")
        }
        try tx.query("DELETE FROM comments WHERE seq = \(seq)")
        guard tx.connection.changes > 0 else { throw ServiceError.notFound("comment") }
        try tx.query("UPDATE posts SET comment_count = comment_count - 1 WHERE seq = \(post.seq)")
        try tx.emit(
            Profile.CommentDeleted(
                postId: post.id, ownerId: post.ownerId, userId: authorId, commentId: commentId, deletedBy: userId))
    }
}
