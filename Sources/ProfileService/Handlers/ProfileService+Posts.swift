import Foundation
import Shared

extension ProfileService {
    func registerPosts(on host: ServiceHost) {
        host.on(Profile.CreatePost.self) { request, _ in try await createPost(request) }
        host.on(Profile.GetPost.self) { request, _ in
            let post = try await database.read { conn -> Profile.Post? in
                guard let record = try PostRows.byId(request.postId, conn) else { return nil }
                return try PostRows.render([record], viewerId: request.viewerId, conn).first
            }
            guard let post else { throw ServiceError.notFound("post") }
            return post
        }
        host.on(Profile.DeletePost.self) { request, _ in try await deletePost(request) }
        host.on(Profile.ListPosts.self) { request, _ in try await listPosts(request) }
    }

    /// Validates and stores a post with its tags, and emits `PostCreated`.
    /// - Throws: 400 with every field error (`taggedUsernames` `unknown_user` names the unknown
    ///   ones), 404 for an unknown owner.
    func createPost(_ request: Profile.CreatePost.Request) async throws -> Profile.Post {
        var errors: [FieldError] = []
        if let e = FieldRules.postType(request.postType) { errors.append(e) }
        if let e = FieldRules.httpURL(request.mediaURL, field: "mediaURL") { errors.append(e) }
        if let e = FieldRules.httpURL(request.thumbnailURL, field: "thumbnailURL") { errors.append(e) }
        let caption = request.caption ?? ""
        if let e = FieldRules.caption(caption) { errors.append(e) }
        var names: [String] = []
        for name in request.taggedUsernames.map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }
        ) where !names.contains(name) {
            names.append(name)
        }
        if names.count > 20 {
            errors.append(
                FieldError(field: "taggedUsernames", code: "too_many", message: "at most 20 tagged users"))
            names = []
        }
        let owner = try await directory.require(id: request.ownerId)
        let tagged = try await directory.users(usernames: names)
        let unknown = names.filter { tagged[$0] == nil }
        if !unknown.isEmpty {
            errors.append(
                FieldError(
                    field: "taggedUsernames", code: "unknown_user",
                    message: "unknown: \(unknown.joined(separator: ", "))"))
        }
        if !errors.isEmpty { throw ServiceError.validation(errors) }
        let taggedIds = names.compactMap { tagged[$0]?.id }
        let id = RandomID.make()
        let now = Timestamp.now()
        return try await database.write { tx in
            try tx.query(
                """
                INSERT INTO posts(id, owner_id, post_type, media_url, thumbnail_url, caption, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, [id, owner.id, request.postType, request.mediaURL, request.thumbnailURL, caption, now])
            let seq = tx.connection.lastInsertRowID
            for (position, userId) in taggedIds.enumerated() {
                try tx.query(
                    "INSERT INTO post_tags(post_seq, user_id, position) VALUES (?, ?, ?)",
                    [seq, userId, position])
            }
            try tx.emit(
                Profile.PostCreated(
                    postId: id, ownerId: owner.id, thumbnailURL: request.thumbnailURL,
                    taggedUserIds: taggedIds, createdAt: now))
            guard let record = try PostRows.byId(id, tx.connection) else {
                throw ServiceError.internal("post vanished")
            }
            return try PostRows.render([record], viewerId: owner.id, tx.connection)[0]
        }
    }

    /// Deletes a post with its likes, comments and tags, and emits `PostDeleted`.
    /// - Throws: 404 for an unknown post, 403 `forbidden` unless `userId` owns it.
    func deletePost(_ request: Profile.DeletePost.Request) async throws -> Empty {
        try await database.write { tx in
            guard let post = try PostRows.byId(request.postId, tx.connection) else {
                throw ServiceError.notFound("post")
            }
            guard post.ownerId == request.userId else {
                throw ServiceError.forbidden("only the owner can delete a post")
            }
            try tx.query("DELETE FROM likes WHERE post_seq = ?", [post.seq])
            try tx.query("DELETE FROM comments WHERE post_seq = ?", [post.seq])
            try tx.query("DELETE FROM post_tags WHERE post_seq = ?", [post.seq])
            try tx.query("DELETE FROM posts WHERE seq = ?", [post.seq])
            try tx.emit(Profile.PostDeleted(postId: post.id, ownerId: post.ownerId))
            return Empty()
        }
    }

    /// The grid (newest first) or the tagged tab of `username`.
    /// - Throws: 404 for an unknown username, 400 `invalid_cursor`.
    func listPosts(_ request: Profile.ListPosts.Request) async throws -> Page<Profile.Post> {
        let after = try Cursor.decode(request.page.cursor)
        guard let user = try await directory.user(username: request.username) else {
            throw ServiceError.notFound("user")
        }
        let limit = Cursor.limit(request.page)
        return try await database.read { conn in
            try conn.snapshot {
                let page = try PostRows.page(
                    userId: user.id, tagged: request.tagged, after: after, limit: limit, conn)
                return Page(
                    items: try PostRows.render(page.records, viewerId: request.viewerId, conn),
                    nextCursor: page.next)
            }
        }
    }
}
