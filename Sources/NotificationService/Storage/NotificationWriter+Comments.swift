import Messages
import Storage

extension NotificationWriter {
    /// Removes the `comment` notification of comment `commentId` by `actorId` to `recipientId`
    /// (the post's owner), if any, from the recent table or the merged one
    /// (`NotificationRemoval`, with `suppressRepeat` as an unlike: the list, its group and the
    /// badge agree afterwards), in `tx`. A comment's dedup key is `objectKey(commentId)`, so a new
    /// comment, with a new id, notifies again: one notification per comment that exists (API.md's
    /// undo/redo rule). Nothing to do when NotificationService never met the users (no
    /// notification was made).
    /// - Throws: the engine's error.
    static func removeComment(recipientId: String, actorId: String, commentId: String, in tx: Transaction) throws {
        let c = tx.connection
        guard let recipient = try Keys.existingUser(recipientId, on: c), let actor = try Keys.existingUser(actorId, on: c)
        else { return }
        try NotificationRemoval.remove(
            try NotificationRemoval.rows(
                where:
                    """
                    recipient = \(recipient) AND actor = \(actor) AND type = \(NotificationType.comment.rawValue)
                        AND once = \(objectKey(commentId))
                    """,
                on: c),
            suppressRepeat: true, in: tx)
    }
}
