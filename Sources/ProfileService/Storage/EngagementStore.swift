import Messages
import Storage
import Wire

/// A comment about to be stored.
struct NewComment: Sendable {
    var id: String
    var postId: String
    var authorId: String
    var text: String
    /// RFC 3339.
    var createdAt: String
    /// The request's `Idempotency-Key` claim, or nil: the comment is recorded as the key's reply
    /// in the comment's transaction.
    var idempotency: IdempotencyClaim? = nil
}

/// Likes and comments (`likes`, `comments`, and the counters on `posts`): every statement on
/// those tables. Counters change in the same transaction as the rows they count, and only on a
/// real change, which is also when the event is emitted.
protocol EngagementStore: Sendable {
    /// Likes or unlikes (idempotent); emits `profile.post.liked` / `profile.post.unliked` on a
    /// real change. A like needs the post actionable for the liker (`Access`); an unlike is
    /// always taken. - Throws: 404 for an unknown post or one hidden from the liker, 403
    /// `private_account`, 409 `blocking`.
    func setLike(postId: String, userId: String, liked: Bool) async throws -> Profile.SetLike.Reply

    /// The users who liked a post, newest like first (unknown users, and users who block
    /// `viewerId` or whom they block, left out).
    /// - Throws: 404 for an unknown post or one hidden from the viewer, 403 `private_account`,
    ///   400 `invalid_cursor`.
    func likes(postId: String, page: PageRequest, viewerId: String?) async throws -> Page<PublicUser>

    /// Adds a comment and emits `profile.post.commented` (with an `idempotency` claim, records
    /// the reply); the post must be actionable for its author. - Throws: 404 for an unknown or
    /// hidden post, 403 `private_account`, 409 `blocking`, 409 `idempotency_key_in_use` when
    /// another request with the claim's key committed first.
    func addComment(_ comment: NewComment) async throws -> Profile.Comment

    /// A post's comments, oldest first, less those of users who block `viewerId` or whom they
    /// block. - Throws: 404 for an unknown or hidden post, 403 `private_account`, 400 `invalid_cursor`.
    func comments(postId: String, page: PageRequest, viewerId: String?) async throws -> Page<Profile.Comment>

    /// Deletes comment `commentId` of post `postId` for `userId` (its author or the post's
    /// owner), lowers the post's `comment_count` and emits `profile.comment.deleted`, in one
    /// transaction (`SQLEngagementStore+Comments.swift`). Like an unlike, always taken: removing
    /// a comment is not subject to `Visibility` (a blocked author may still delete theirs).
    /// - Throws: 404 for an unknown post, or a comment not on it or already deleted; 403
    ///   `forbidden` for anyone but the author and the owner.
    func deleteComment(postId: String, commentId: String, by userId: String) async throws
}

/// `EngagementStore` on a SQL `Database`, either engine.
struct SQLEngagementStore: EngagementStore {
    let database: Database

    func setLike(postId: String, userId: String, liked: Bool) async throws -> Profile.SetLike.Reply {
        try await database.write { tx in
            guard let post = try PostRecord.byId(postId, on: tx.connection) else { throw ServiceError.notFound("post") }
            if liked {
                try Visibility.access(viewer: userId, owner: post.ownerId, on: tx.connection).requireActionable("post")
                try tx.query("INSERT INTO likes(post_seq, user_id) VALUES (\(post.seq), \(userId)) ON CONFLICT DO NOTHING")
                if tx.connection.changes > 0 {
                    try tx.query("UPDATE posts SET like_count = like_count + 1 WHERE seq = \(post.seq)")
                    // The liker's public fields travel with the event, so the owner's live
                    // stream shows them without asking this service again.
                    let user = try SQLProfileStore.records(ids: [userId], on: tx.connection)[userId]?.publicUser
                    try tx.emit(
                        Profile.PostLiked(
                            postId: post.id, ownerId: post.ownerId, userId: userId, thumbnailURL: post.thumbnailURL,
                            postType: post.postType, user: user))
                }
            } else {
                try tx.query("DELETE FROM likes WHERE post_seq = \(post.seq) AND user_id = \(userId)")
                if tx.connection.changes > 0 {
                    try tx.query("UPDATE posts SET like_count = like_count - 1 WHERE seq = \(post.seq)")
                    try tx.emit(Profile.PostUnliked(postId: post.id, ownerId: post.ownerId, userId: userId))
                }
            }
            let count = try tx.connection.scalar("SELECT like_count FROM posts WHERE seq = \(post.seq)") ?? 0
            return .init(liked: liked, likeCount: Int(count))
        }
    }

    func likes(postId: String, page: PageRequest, viewerId: String?) async throws -> Page<PublicUser> {
        let after = try database.pageCursors.decode(page.cursor, list: "likes", owner: postId) ?? Int64.max
        let limit = page.clampedLimit
        return try await database.read { c in
            guard let post = try PostRecord.byId(postId, on: c) else { throw ServiceError.notFound("post") }
            let shown: SQL
            if let viewerId {
                try Visibility.access(viewer: viewerId, owner: post.ownerId, on: c).requireReadable("post")
                shown = "AND \(Visibility.unblocked("user_id", viewer: viewerId))"
            } else {
                shown = ""
            }
            let rows = try c.query(
                """
                SELECT seq, user_id FROM likes WHERE post_seq = \(post.seq) AND seq < \(after) \(shown)
                ORDER BY seq DESC LIMIT \(limit + 1)
                """
            )
            let page = Array(rows.prefix(limit))
            let ids = try page.map { try $0.string("user_id") }
            let users = try SQLProfileStore.records(ids: ids, on: c)
            return Page(
                items: ids.compactMap { users[$0]?.publicUser },
                nextCursor: rows.count > limit
                    ? try page.last.map { database.pageCursors.encode(list: "likes", owner: postId, key: try $0.int64("seq")) }
                    : nil)
        }
    }

    func addComment(_ comment: NewComment) async throws -> Profile.Comment {
        try await database.write { tx in
            guard let post = try PostRecord.byId(comment.postId, on: tx.connection) else {
                throw ServiceError.notFound("post")
            }
            try Visibility.access(viewer: comment.authorId, owner: post.ownerId, on: tx.connection).requireActionable("post")
            try tx.query(
                """
                INSERT INTO comments(id, post_seq, user_id, text, created_at)
                    VALUES (\(comment.id), \(post.seq), \(comment.authorId), \(comment.text), \(comment.createdAt))
                """
            )
            try tx.query("UPDATE posts SET comment_count = comment_count + 1 WHERE seq = \(post.seq)")
            let known = try SQLProfileStore.records(ids: [comment.authorId], on: tx.connection)[comment.authorId]?.publicUser
            try tx.emit(
                Profile.PostCommented(
                    postId: post.id, ownerId: post.ownerId, userId: comment.authorId, commentId: comment.id,
                    text: comment.text, thumbnailURL: post.thumbnailURL, user: known))
            let author = known ?? PublicUser(id: comment.authorId, username: "", name: "", bio: "", profilePhotoURL: nil)
            let added = Profile.Comment(
                id: comment.id, postId: post.id, author: author, text: comment.text, createdAt: comment.createdAt)
            try comment.idempotency?.save(added, on: tx.connection)
            return added
        }
    }

    func comments(postId: String, page: PageRequest, viewerId: String?) async throws -> Page<Profile.Comment> {
        let after = try database.pageCursors.decode(page.cursor, list: "comments", owner: postId) ?? 0
        let limit = page.clampedLimit
        return try await database.read { c in
            guard let post = try PostRecord.byId(postId, on: c) else { throw ServiceError.notFound("post") }
            let shown: SQL
            if let viewerId {
                try Visibility.access(viewer: viewerId, owner: post.ownerId, on: c).requireReadable("post")
                shown = "AND \(Visibility.unblocked("user_id", viewer: viewerId))"
            } else {
                shown = ""
            }
            let rows = try c.query(
                """
                SELECT seq, id, user_id, text, created_at FROM comments
                WHERE post_seq = \(post.seq) AND seq > \(after) \(shown) ORDER BY seq LIMIT \(limit + 1)
                """)
            let page = Array(rows.prefix(limit))
            let users = try SQLProfileStore.records(ids: try page.map { try $0.string("user_id") }, on: c)
            let items = try page.map { r in
                let authorId = try r.string("user_id")
                return Profile.Comment(
                    id: try r.string("id"), postId: post.id,
                    author: users[authorId]?.publicUser
                        ?? PublicUser(id: authorId, username: "", name: "", bio: "", profilePhotoURL: nil),
                    text: try r.string("text"), createdAt: try r.string("created_at"))
            }
            return Page(
                items: items,
                nextCursor: rows.count > limit
                    ? try page.last.map { database.pageCursors.encode(list: "comments", owner: postId, key: try $0.int64("seq")) }
                    : nil)
        }
    }
}
