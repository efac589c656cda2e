import Messages
import Storage
import Wire

/// One `posts` row.
struct PostRecord: Sendable, RowDecodable {
    var seq: Int64
    var id: String
    var ownerId: String
    var postType: String
    var mediaURL: String
    var thumbnailURL: String
    var caption: String
    var createdAt: String
    var likeCount: Int
    var commentCount: Int
    /// The upload the post shows (nil for a post made from URLs).
    var mediaId: String?

    static let columns: SQL =
        "p.seq, p.id, p.owner_id, p.post_type, p.media_url, p.thumbnail_url, p.caption, p.created_at, p.like_count, p.comment_count, p.media_id"

    init(row: Row) throws {
        seq = try row.int64("seq")
        id = try row.string("id")
        ownerId = try row.string("owner_id")
        postType = try row.string("post_type")
        mediaURL = try row.string("media_url")
        thumbnailURL = try row.string("thumbnail_url")
        caption = try row.string("caption")
        createdAt = try row.string("created_at")
        likeCount = try row.int("like_count")
        commentCount = try row.int("comment_count")
        mediaId = try row.optionalString("media_id")
    }

    /// The post by `id` on `c`, or nil.
    static func byId(_ id: String, on c: DatabaseConnection) throws -> PostRecord? {
        try c.queryOne(PostRecord.self, "SELECT \(columns) FROM posts p WHERE p.id = \(id)")
    }
}

/// A post about to be stored.
struct NewPost: Sendable {
    var id: String
    var ownerId: String
    var postType: String
    var mediaURL: String
    var thumbnailURL: String
    var caption: String
    /// In the order they were named.
    var taggedUserIds: [String]
    /// RFC 3339.
    var createdAt: String
    /// The owner's upload the post shows (its URLs are in `mediaURL`/`thumbnailURL`), or nil.
    var mediaId: String? = nil
    /// The request's `Idempotency-Key` claim, or nil: the post as its owner sees it is recorded
    /// as the key's reply in the post's transaction.
    var idempotency: IdempotencyClaim? = nil
}

/// Posts and their tags (`posts`, `post_tags`): every statement on those tables.
protocol PostStore: Sendable {
    /// Stores a post with its tags and emits `profile.post.created`, in one transaction; a post
    /// from an upload marks the upload used; a post with an `idempotency` claim records its reply.
    /// - Returns: the post as its owner sees it.
    /// - Throws: 404 `not_found` when `mediaId` is not one of the owner's uploads, 409
    ///   `idempotency_key_in_use` when another request with the claim's key committed first.
    func create(_ post: NewPost) async throws -> Profile.Post

    /// The post as `viewerId` sees it (`likedByMe`), or nil.
    func post(id: String, viewerId: String) async throws -> Profile.Post?

    /// Deletes the post with its likes, comments and tags, and emits `profile.post.deleted`; its
    /// upload, if any, is due for collection after the store's delay.
    /// - Throws: 404 for an unknown post, 403 `forbidden` unless `userId` owns it.
    func delete(id: String, by userId: String) async throws

    /// A page of `userId`'s posts (or, with `tagged`, of posts tagging them), newest first, as
    /// `viewerId` sees them. - Throws: 400 `invalid_cursor`.
    func page(userId: String, tagged: Bool, viewerId: String, page: PageRequest) async throws -> Page<Profile.Post>

    /// How many posts `userId` has.
    func count(ownerId: String) async throws -> Int
}

/// `PostStore` on a SQL `Database`, either engine.
struct SQLPostStore: PostStore {
    let database: Database
    /// How long a deleted post's upload is kept before the collector looks at it, in ms.
    var mediaReleaseDelayMs: Int64 = 60_000

    func create(_ post: NewPost) async throws -> Profile.Post {
        try await database.write { tx in
            // A request under way when the owner's sessions ended (suspended, deleting).
            if try AccountStates.isHidden(post.ownerId, on: tx.connection) { throw ServiceError.notFound("user") }
            if let mediaId = post.mediaId,
                try SQLMediaRecordStore.attach(id: mediaId, ownerId: post.ownerId, on: tx.connection) == nil
            {
                throw ServiceError.notFound("media")
            }
            let seq = try tx.connection.insertReturning(
                """
                INSERT INTO posts(id, owner_id, post_type, media_url, thumbnail_url, caption, created_at, media_id)
                VALUES (\(post.id), \(post.ownerId), \(post.postType), \(post.mediaURL), \(post.thumbnailURL), \(post.caption),
                    \(post.createdAt), \(post.mediaId)) RETURNING seq
                """)
            for (position, userId) in post.taggedUserIds.enumerated() {
                try tx.query(
                    "INSERT INTO post_tags(post_seq, user_id, position) VALUES (\(seq), \(userId), \(position))")
            }
            let owner = try SQLProfileStore.records(ids: [post.ownerId], on: tx.connection)[post.ownerId]?.publicUser
            try tx.emit(
                Profile.PostCreated(
                    postId: post.id, ownerId: post.ownerId, thumbnailURL: post.thumbnailURL,
                    taggedUserIds: post.taggedUserIds, createdAt: post.createdAt, owner: owner))
            guard let record = try PostRecord.byId(post.id, on: tx.connection) else {
                throw ServiceError.internal("post vanished")
            }
            let created = try Self.render([record], viewerId: post.ownerId, on: tx.connection)[0]
            try post.idempotency?.save(created, on: tx.connection)
            return created
        }
    }

    func post(id: String, viewerId: String) async throws -> Profile.Post? {
        try await database.read { c in
            guard let record = try PostRecord.byId(id, on: c) else { return nil }
            try Visibility.access(viewer: viewerId, owner: record.ownerId, on: c).requireReadable("post")
            return try Self.render([record], viewerId: viewerId, on: c).first
        }
    }

    func delete(id: String, by userId: String) async throws {
        let delay = mediaReleaseDelayMs
        try await database.write { tx in
            guard let post = try PostRecord.byId(id, on: tx.connection) else { throw ServiceError.notFound("post") }
            guard post.ownerId == userId else { throw ServiceError.forbidden("only the owner can delete a post") }
            try tx.query("DELETE FROM likes WHERE post_seq = \(post.seq)")
            try tx.query("DELETE FROM comments WHERE post_seq = \(post.seq)")
            try tx.query("DELETE FROM post_tags WHERE post_seq = \(post.seq)")
            try tx.query("DELETE FROM posts WHERE seq = \(post.seq)")
            if let mediaId = post.mediaId {
                try SQLMediaRecordStore.release(id: mediaId, dueMs: Timestamp.nowMs() + delay, on: tx.connection)
            }
            try tx.emit(Profile.PostDeleted(postId: post.id, ownerId: post.ownerId))
        }
    }

    func page(userId: String, tagged: Bool, viewerId: String, page: PageRequest) async throws -> Page<Profile.Post> {
        let list = tagged ? "tagged" : "posts"
        let after = try database.pageCursors.decode(page.cursor, list: list, owner: userId) ?? Int64.max
        let limit = page.clampedLimit
        return try await database.read { c in
            try c.snapshot {
                let sql: SQL =
                    tagged
                    ? """
                    SELECT \(PostRecord.columns) FROM post_tags t JOIN posts p ON p.seq = t.post_seq
                    WHERE t.user_id = \(userId) AND t.post_seq < \(after)
                        AND \(Visibility.readable(owner: "p.owner_id", viewer: viewerId))
                    ORDER BY t.post_seq DESC LIMIT \(limit + 1)
                    """
                    : """
                    SELECT \(PostRecord.columns) FROM posts p WHERE p.owner_id = \(userId) AND p.seq < \(after)
                    ORDER BY p.seq DESC LIMIT \(limit + 1)
                    """
                let rows = try c.query(PostRecord.self, sql)
                let items = Array(rows.prefix(limit))
                return Page(
                    items: try Self.render(items, viewerId: viewerId, on: c),
                    nextCursor: rows.count > limit
                        ? items.last.map { database.pageCursors.encode(list: list, owner: userId, key: $0.seq) } : nil)
            }
        }
    }

    func count(ownerId: String) async throws -> Int {
        try await database.read { Int(try $0.scalar("SELECT COUNT(*) FROM posts WHERE owner_id = \(ownerId)") ?? 0) }
    }

    /// Builds `Post`s: owner and tagged users from the replica, `likedByMe` for `viewerId`. A user
    /// the replica does not know (yet) is shown with an empty profile rather than dropping the post.
    static func render(_ records: [PostRecord], viewerId: String, on c: DatabaseConnection) throws -> [Profile.Post] {
        var tags: [Int64: [String]] = [:]
        for r in records {
            // A suspended or deleted account is left out of the tags.
            tags[r.seq] = try c.query(
                """
                SELECT user_id FROM post_tags WHERE post_seq = \(r.seq) AND \(AccountStates.present("user_id"))
                ORDER BY position
                """
            )
            .map { try $0.string("user_id") }
        }
        let ids = records.map(\.ownerId) + tags.values.flatMap { $0 }
        let users = try SQLProfileStore.records(ids: ids, on: c)
        func user(_ id: String) -> PublicUser {
            users[id]?.publicUser ?? PublicUser(id: id, username: "", name: "", bio: "", profilePhotoURL: nil)
        }
        return try records.map { r in
            Profile.Post(
                id: r.id, owner: user(r.ownerId), postType: r.postType, mediaURL: r.mediaURL,
                thumbnailURL: r.thumbnailURL, caption: r.caption, taggedUsers: (tags[r.seq] ?? []).map(user),
                likeCount: r.likeCount, commentCount: r.commentCount,
                likedByMe: try c.exists("SELECT 1 FROM likes WHERE post_seq = \(r.seq) AND user_id = \(viewerId)"),
                createdAt: r.createdAt)
        }
    }
}
