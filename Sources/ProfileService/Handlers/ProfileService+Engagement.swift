import Foundation
import Shared

extension ProfileService {
    func registerEngagement(on host: ServiceHost) {
        host.on(Profile.SetLike.self) { request, _ in try await setLike(request) }
        host.on(Profile.ListLikes.self) { request, _ in try await listLikes(request) }
        host.on(Profile.AddComment.self) { request, _ in try await addComment(request) }
        host.on(Profile.ListComments.self) { request, _ in try await listComments(request) }
    }

    /// Likes or unlikes (idempotent). The counter changes in the same transaction as the like
    /// row, and only on a real change, which is also when `PostLiked`/`PostUnliked` is emitted.
    /// - Throws: 404 for an unknown post or user.
    func setLike(_ request: Profile.SetLike.Request) async throws -> Profile.SetLike.Reply {
        _ = try await directory.require(id: request.userId)
        return try await database.write { tx in
            guard let post = try PostRows.byId(request.postId, tx.connection) else {
                throw ServiceError.notFound("post")
            }
            if request.liked {
                try tx.query(
                    "INSERT OR IGNORE INTO likes(post_seq, user_id) VALUES (?, ?)",
                    [post.seq, request.userId])
                if tx.connection.changes > 0 {
                    try tx.query("UPDATE posts SET like_count = like_count + 1 WHERE seq = ?", [post.seq])
                    try tx.emit(
                        Profile.PostLiked(
                            postId: post.id, ownerId: post.ownerId, userId: request.userId,
                            thumbnailURL: post.thumbnailURL, postType: post.postType))
                }
            } else {
                try tx.query(
                    "DELETE FROM likes WHERE post_seq = ? AND user_id = ?", [post.seq, request.userId])
                if tx.connection.changes > 0 {
                    try tx.query("UPDATE posts SET like_count = like_count - 1 WHERE seq = ?", [post.seq])
                    try tx.emit(
                        Profile.PostUnliked(postId: post.id, ownerId: post.ownerId, userId: request.userId))
                }
            }
            let count =
                try tx.connection.queryOne("SELECT like_count FROM posts WHERE seq = ?", [post.seq])?.int(0)
                ?? 0
            return .init(liked: request.liked, likeCount: Int(count))
        }
    }

    /// The users who liked a post, newest like first.
    /// - Throws: 404 for an unknown post, 400 `invalid_cursor`.
    func listLikes(_ request: Profile.ListLikes.Request) async throws -> Page<PublicUser> {
        let after = try Cursor.decode(request.page.cursor)
        let limit = Cursor.limit(request.page)
        return try await database.read { conn in
            guard let post = try PostRows.byId(request.postId, conn) else {
                throw ServiceError.notFound("post")
            }
            let rows = try conn.query(
                "SELECT seq, user_id FROM likes WHERE post_seq = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                [post.seq, after ?? Int64.max, limit + 1])
            let page = Array(rows.prefix(limit))
            let users = try UserRows.publicUsers(ids: page.map { $0.string(1) }, conn)
            return Page(
                items: page.compactMap { users[$0.string(1)] },
                nextCursor: rows.count > limit ? page.last.map { Cursor.encode($0.int(0)) } : nil)
        }
    }

    /// Adds a comment and emits `PostCommented`.
    /// - Throws: 400 `text` (empty after trimming, or over 2,200 characters), 404.
    func addComment(_ request: Profile.AddComment.Request) async throws -> Profile.Comment {
        if let e = FieldRules.commentText(request.text) { throw ServiceError.validation([e]) }
        let author = try await directory.require(id: request.userId)
        let id = RandomID.make()
        let now = Timestamp.now()
        let text = request.text.trimmingCharacters(in: .whitespacesAndNewlines)
        return try await database.write { tx in
            guard let post = try PostRows.byId(request.postId, tx.connection) else {
                throw ServiceError.notFound("post")
            }
            try tx.query(
                "INSERT INTO comments(id, post_seq, user_id, text, created_at) VALUES (?, ?, ?, ?, ?)",
                [id, post.seq, author.id, text, now])
            try tx.query("UPDATE posts SET comment_count = comment_count + 1 WHERE seq = ?", [post.seq])
            try tx.emit(
                Profile.PostCommented(
                    postId: post.id, ownerId: post.ownerId, userId: author.id, commentId: id, text: text,
                    thumbnailURL: post.thumbnailURL))
            let user = try UserRows.byId(author.id, tx.connection)?.publicUser ?? author.publicUser
            return Profile.Comment(id: id, postId: post.id, author: user, text: text, createdAt: now)
        }
    }

    /// A post's comments, oldest first.
    /// - Throws: 404 for an unknown post, 400 `invalid_cursor`.
    func listComments(_ request: Profile.ListComments.Request) async throws -> Page<Profile.Comment> {
        let after = try Cursor.decode(request.page.cursor)
        let limit = Cursor.limit(request.page)
        return try await database.read { conn in
            guard let post = try PostRows.byId(request.postId, conn) else {
                throw ServiceError.notFound("post")
            }
            let rows = try conn.query(
                "SELECT seq, id, user_id, text, created_at FROM comments WHERE post_seq = ? AND seq > ? ORDER BY seq LIMIT ?",
                [post.seq, after ?? 0, limit + 1])
            let page = Array(rows.prefix(limit))
            let users = try UserRows.publicUsers(ids: page.map { $0.string(2) }, conn)
            let items = page.map { r in
                Profile.Comment(
                    id: r.string(1), postId: post.id,
                    author: users[r.string(2)]
                        ?? PublicUser(id: r.string(2), username: "", name: "", bio: "", profilePhotoURL: nil),
                    text: r.string(3), createdAt: r.string(4))
            }
            return Page(
                items: items,
                nextCursor: rows.count > limit ? page.last.map { Cursor.encode($0.int(0)) } : nil)
        }
    }
}
