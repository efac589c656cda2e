import Messages
import Storage
import Wire

extension SQLEngagementStore {
    /// Deletes comment `commentId` of post `postId` as its author `authorId` would, lowering the
    /// post's `comment_count` in the same transaction: what a moderator's `remove_content` on a
    /// comment goes through (`ModerationEffects`).
    ///
    /// The small internal stand-in for the comment deletion of `profile.delete_comment` (API.md
    /// `DELETE /v1/posts/{id}/comments/{commentId}`), which is not on this branch yet: it emits
    /// no event, so NotificationService keeps the comment's notification. Once that deletion is
    /// here, `ProfileApp` hands `ModerationEffects` that path instead (its event removes the
    /// notification) and this goes.
    /// - Throws: 404 when the post or the comment (of that author, on that post) is gone.
    func removeComment(postId: String, commentId: String, authorId: String) async throws {
        try await database.write { tx in
            guard let post = try PostRecord.byId(postId, on: tx.connection) else { throw ServiceError.notFound("post") }
            try tx.query(
                "DELETE FROM comments WHERE id = \(commentId) AND post_seq = \(post.seq) AND user_id = \(authorId)")
            // Only a real deletion lowers the count (another replica may have deleted it first).
            guard tx.connection.changes > 0 else { throw ServiceError.notFound("comment") }
            try tx.query("UPDATE posts SET comment_count = comment_count - 1 WHERE seq = \(post.seq)")
        }
    }
}
