import Foundation
import Shared

/// One row of `posts`.
struct PostRecord: Sendable {
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

    /// The columns `init(row:)` reads, in order.
    static let columns =
        "seq, id, owner_id, post_type, media_url, thumbnail_url, caption, created_at, like_count, comment_count"

    init(row: Row) {
        seq = row.int(0)
        id = row.string(1)
        ownerId = row.string(2)
        postType = row.string(3)
        mediaURL = row.string(4)
        thumbnailURL = row.string(5)
        caption = row.string(6)
        createdAt = row.string(7)
        likeCount = Int(row.int(8))
        commentCount = Int(row.int(9))
    }
}

/// Reads posts and turns rows into the API's `Post` as one viewer sees it.
enum PostRows {
    /// The post with public id `id`, or nil.
    static func byId(_ id: String, _ conn: SQLiteConnection) throws -> PostRecord? {
        try conn.queryOne("SELECT \(PostRecord.columns) FROM posts WHERE id = ?", [id]).map(
            PostRecord.init(row:))
    }

    /// Builds `Post`s: owner and tagged users from the replica, `likedByMe` for `viewerId`.
    static func render(_ records: [PostRecord], viewerId: String, _ conn: SQLiteConnection) throws
        -> [Profile.Post]
    {
        var users: [String: PublicUser] = [:]
        func user(_ id: String) throws -> PublicUser {
            if let u = users[id] { return u }
            let u =
                try UserRows.byId(id, conn)?.publicUser
                ?? PublicUser(id: id, username: "", name: "", bio: "", profilePhotoURL: nil)
            users[id] = u
            return u
        }
        return try records.map { r in
            let tagged = try conn.query(
                "SELECT user_id FROM post_tags WHERE post_seq = ? ORDER BY position", [r.seq]
            )
            .map { try user($0.string(0)) }
            let liked =
                try conn.queryOne(
                    "SELECT 1 FROM likes WHERE post_seq = ? AND user_id = ?", [r.seq, viewerId]) != nil
            return Profile.Post(
                id: r.id, owner: try user(r.ownerId), postType: r.postType, mediaURL: r.mediaURL,
                thumbnailURL: r.thumbnailURL,
                caption: r.caption, taggedUsers: tagged, likeCount: r.likeCount,
                commentCount: r.commentCount, likedByMe: liked,
                createdAt: r.createdAt)
        }
    }

    /// A page of `ownerId`'s posts (or, with `tagged`, of posts tagging that user), newest first.
    static func page(
        userId: String, tagged: Bool, after cursor: Int64?, limit: Int, _ conn: SQLiteConnection
    ) throws -> (records: [PostRecord], next: String?) {
        let bound = cursor ?? Int64.max
        let cols = PostRecord.columns.split(separator: ",").map {
            "p." + $0.trimmingCharacters(in: .whitespaces)
        }.joined(separator: ", ")
        let sql =
            tagged
            ? """
            SELECT \(cols) FROM post_tags t JOIN posts p ON p.seq = t.post_seq
            WHERE t.user_id = ? AND t.post_seq < ? ORDER BY t.post_seq DESC LIMIT ?
            """
            : "SELECT \(cols) FROM posts p WHERE p.owner_id = ? AND p.seq < ? ORDER BY p.seq DESC LIMIT ?"
        let rows = try conn.query(sql, [userId, bound, limit + 1]).map(PostRecord.init(row:))
        let items = Array(rows.prefix(limit))
        let next = rows.count > limit ? items.last.map { Cursor.encode($0.seq) } : nil
        return (items, next)
    }
}
