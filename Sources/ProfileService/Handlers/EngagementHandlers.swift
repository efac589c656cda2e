import BackendKit
import Foundation
import Messages
import Wire

/// Likes and comments: `profile.set_like`, `profile.list_likes`, `profile.add_comment`,
/// `profile.list_comments`, `profile.delete_comment`.
struct EngagementHandlers: Sendable {
    let users: any ProfileStore
    let engagement: any EngagementStore
    /// Keyed comments (`idempotencyKey`): once per user and key.
    let idempotent: IdempotentWrites
    /// The operator's word list, applied to comments.
    var words = WordList.empty

    func register(on host: ServiceHost) {
        host.on(Profile.SetLike.self) { request, _ in
            guard try await users.user(id: request.userId) != nil else { throw ServiceError.notFound("user") }
            return try await engagement.setLike(postId: request.postId, userId: request.userId, liked: request.liked)
        }
        host.on(Profile.ListLikes.self) { request, _ in
            try await engagement.likes(postId: request.postId, page: request.page, viewerId: request.viewerId)
        }
        host.on(Profile.AddComment.self) { request, _ in
            try await idempotent.run(
                userId: request.userId, key: request.idempotencyKey,
                fingerprint: { try RequestFingerprint.of(Profile.AddComment.self, request) },
                write: { claim in try await addComment(request, idempotency: claim) })
        }
        host.on(Profile.ListComments.self) { request, _ in
            try await engagement.comments(postId: request.postId, page: request.page, viewerId: request.viewerId)
        }
        host.on(Profile.DeleteComment.self) { request, _ in
            try await engagement.deleteComment(postId: request.postId, commentId: request.commentId, by: request.userId)
            return Empty()
        }
    }

    /// Adds a comment (trimmed); with an `idempotency` claim (`IdempotentWrites`), records it as
    /// the key's reply. - Throws: 400 `text`, 422 `objectionable_content` on `text` (a term of the
    /// word list), 404 for an unknown post or user, 409 `idempotency_key_in_use`.
    func addComment(_ request: Profile.AddComment.Request, idempotency: IdempotencyClaim? = nil) async throws
        -> Profile.Comment
    {
        if let e = ProfileRules.commentText(request.text) { throw ServiceError.validation([e]) }
        if let e = words.check(request.text, field: "text") { throw ServiceError.objectionableContent([e]) }
        guard let author = try await users.user(id: request.userId) else { throw ServiceError.notFound("user") }
        return try await engagement.addComment(
            NewComment(
                id: RandomID.make(), postId: request.postId, authorId: author.id,
                text: request.text.trimmingCharacters(in: .whitespacesAndNewlines), createdAt: Timestamp.now(),
                idempotency: idempotency))
    }
}
