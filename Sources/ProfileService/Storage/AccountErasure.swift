import Media
import Messages
import Storage
import Support
import Wire

/// The SQL of a deleted account's erasure in ProfileService (`AccountEraser` runs it, a batch a
/// transaction; the phases are listed there).
enum AccountErasure {
    /// What one batch did.
    enum Step: Equatable, Sendable {
        /// Deleted `rows` rows in `phase`.
        case batch(phase: String, rows: Int)
        /// Nothing was left: the account is erased here (`profile.account.erased` emitted).
        case finished
        /// The account is not being erased (no `erasures` row).
        case none
    }

    /// The account whose erasure began first, if any.
    static func next(on c: DatabaseConnection) throws -> String? {
        try c.queryOne("SELECT user_id FROM erasures ORDER BY started_ms, user_id LIMIT 1").map { try $0.string("user_id") }
    }

    /// One batch of `userId`'s erasure, in `tx` (see the type).
    /// - Throws: the engine's error, `ServiceError` when a file cannot be removed (the batch is
    ///   rolled back and tried again on the next run).
    static func step(_ userId: String, batch: Int, files: any MediaStore, in tx: Transaction) throws -> Step {
        let c = tx.connection
        guard try c.exists("SELECT 1 FROM erasures WHERE user_id = \(userId)") else { return .none }
        if let rows = try likes(of: userId, limit: batch, in: tx) { return .batch(phase: "likes", rows: rows) }
        if let rows = try comments(of: userId, limit: batch, in: tx) {
            return .batch(phase: "comments", rows: rows)
        }
        if let rows = try deleteChunk(
            "post_tags", key: "post_seq", where: "user_id = \(userId)", limit: batch, in: tx)
        {
            return .batch(phase: "tags", rows: rows)
        }
        if let rows = try posts(of: userId, budget: batch, in: tx) { return .batch(phase: "posts", rows: rows) }
        if let rows = try uploads(of: userId, limit: batch, in: tx) {
            return .batch(phase: "uploads", rows: rows)
        }
        if let rows = try Self.files(of: userId, limit: batch, files: files, in: tx) {
            return .batch(phase: "files", rows: rows)
        }
        if let rows = try SQLReportStore.detachReporter(userId, limit: batch, in: tx) {
            return .batch(phase: "reports", rows: rows)
        }
        for (table, key, condition) in [
            ("graph_follows", "followee", "follower = \(userId)"), ("graph_follows", "follower", "followee = \(userId)"),
            ("graph_blocks", "blocked", "blocker = \(userId)"), ("graph_blocks", "blocker", "blocked = \(userId)"),
            ("idempotency_keys", "idempotency_key", "user_id = \(userId)"),
        ] as [(String, String, SQL)] {
            if let rows = try deleteChunk(table, key: key, where: condition, limit: batch, in: tx) {
                return .batch(phase: table, rows: rows)
            }
        }
        try tx.query("DELETE FROM profiles WHERE id = \(userId)")
        try tx.query("DELETE FROM identities WHERE id = \(userId)")
        try tx.query("UPDATE account_states SET state = \(AccountStates.erased) WHERE user_id = \(userId)")
        try tx.query("DELETE FROM erasures WHERE user_id = \(userId)")
        try tx.emit(Profile.AccountErased(userId: userId))
        return .finished
    }

    /// Deletes up to `limit` rows of `table` matching `condition` (whose other key column is
    /// `key`). - Returns: how many, or nil when none matched.
    static func deleteChunk(_ table: String, key: String, where condition: SQL, limit: Int, in tx: Transaction) throws
        -> Int?
    {
        let t: SQL = "\(unescaped: table)"
        let k: SQL = "\(unescaped: key)"
        try tx.query("DELETE FROM \(t) WHERE \(condition) AND \(k) IN (SELECT \(k) FROM \(t) WHERE \(condition) LIMIT \(limit))")
        let n = tx.connection.changes
        return n > 0 ? n : nil
    }

    /// Up to `limit` of the account's likes, each liked post's count lowered.
    static func likes(of userId: String, limit: Int, in tx: Transaction) throws -> Int? {
        let rows = try tx.query("SELECT seq, post_seq FROM likes WHERE user_id = \(userId) ORDER BY post_seq LIMIT \(limit)")
        guard !rows.isEmpty else { return nil }
        let seqs = try rows.map { try $0.int64("seq") }
        try tx.query("DELETE FROM likes WHERE seq IN (\(list: seqs))")
        for (post, n) in try counts(rows) {
            try tx.query("UPDATE posts SET like_count = like_count - \(n) WHERE seq = \(post)")
        }
        return rows.count
    }

    /// Up to `limit` of the account's comments, each commented post's count lowered.
    static func comments(of userId: String, limit: Int, in tx: Transaction) throws -> Int? {
        let rows = try tx.query("SELECT seq, post_seq FROM comments WHERE user_id = \(userId) ORDER BY seq LIMIT \(limit)")
        guard !rows.isEmpty else { return nil }
        let seqs = try rows.map { try $0.int64("seq") }
        try tx.query("DELETE FROM comments WHERE seq IN (\(list: seqs))")
        for (post, n) in try counts(rows) {
            try tx.query("UPDATE posts SET comment_count = comment_count - \(n) WHERE seq = \(post)")
        }
        return rows.count
    }

    /// How many of `rows` name each `post_seq`.
    private static func counts(_ rows: [Row]) throws -> [(Int64, Int64)] {
        var counts: [Int64: Int64] = [:]
        for row in rows { counts[try row.int64("post_seq"), default: 0] += 1 }
        return counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The account's posts, oldest first, with what others left on them, until `budget` rows are
    /// deleted. - Returns: how many rows, or nil when the account has no post left.
    static func posts(of userId: String, budget: Int, in tx: Transaction) throws -> Int? {
        let posts = try tx.query(
            "SELECT seq, id, media_id FROM posts WHERE owner_id = \(userId) ORDER BY seq LIMIT \(budget)")
        guard !posts.isEmpty else { return nil }
        var left = budget
        for post in posts {
            let seq = try post.int64("seq")
            for table in ["likes", "comments"] {
                let t: SQL = "\(unescaped: table)"
                try tx.query("DELETE FROM \(t) WHERE seq IN (SELECT seq FROM \(t) WHERE post_seq = \(seq) LIMIT \(left))")
                left -= tx.connection.changes
                if left <= 0 { return budget }
            }
            try tx.query(
                """
                DELETE FROM post_tags WHERE post_seq = \(seq) AND user_id IN
                    (SELECT user_id FROM post_tags WHERE post_seq = \(seq) LIMIT \(left))
                """
            )
            left -= tx.connection.changes
            if left <= 0 { return budget }
            if let media = try post.optionalString("media_id") { try keepForFiles(userId, media, in: tx) }
            try tx.query("DELETE FROM posts WHERE seq = \(seq)")
            try tx.emit(Profile.PostDeleted(postId: try post.string("id"), ownerId: userId))
            left -= 1
            if left <= 0 { return budget }
        }
        return budget - left
    }

    /// Notes that the files of `mediaId` are to be removed unless someone else uses them.
    private static func keepForFiles(_ userId: String, _ mediaId: String, in tx: Transaction) throws {
        try tx.query(
            """
            INSERT INTO erasure_media(user_id, media_id) VALUES (\(userId), \(mediaId))
            ON CONFLICT (user_id, media_id) DO NOTHING
            """)
    }

    /// The profile photo and up to `limit` uploads' rows. - Returns: how many, or nil when none.
    static func uploads(of userId: String, limit: Int, in tx: Transaction) throws -> Int? {
        var rows = 0
        if let photo = try tx.connection.queryOne(
            "SELECT photo_media_id FROM profiles WHERE id = \(userId) AND photo_media_id IS NOT NULL")
        {
            try keepForFiles(userId, try photo.string("photo_media_id"), in: tx)
            try tx.query("UPDATE profiles SET photo_media_id = NULL, photo_url = NULL WHERE id = \(userId)")
            rows += 1
        }
        let ids = try tx.query("SELECT id FROM media WHERE owner_id = \(userId) LIMIT \(limit)").map { try $0.string("id") }
        for id in ids { try keepForFiles(userId, id, in: tx) }
        if !ids.isEmpty { try tx.query("DELETE FROM media WHERE owner_id = \(userId) AND id IN (\(list: ids))") }
        rows += ids.count
        return rows > 0 ? rows : nil
    }

    /// Removes the files of up to `limit` noted media that no one else uses (the rows are locked
    /// first on PostgreSQL, as `MediaRecordStore.collect` does, so an upload of the same bytes
    /// either keeps them or writes them again after).
    static func files(of userId: String, limit: Int, files: any MediaStore, in tx: Transaction) throws -> Int? {
        let c = tx.connection
        let ids = try c.query("SELECT media_id FROM erasure_media WHERE user_id = \(userId) LIMIT \(limit)").map {
            try $0.string("media_id")
        }
        guard !ids.isEmpty else { return nil }
        for id in ids {
            try c.query("SELECT id FROM media WHERE id = \(id)\(SQL.forUpdate)")
            let used =
                try c.exists("SELECT 1 FROM media WHERE id = \(id)")
                || c.exists("SELECT 1 FROM posts WHERE media_id = \(id)")
                || c.exists("SELECT 1 FROM profiles WHERE photo_media_id = \(id)")
            if !used, let mediaId = MediaID(id) {
                do throws(MediaError) { try files.delete(mediaId) } catch {
                    throw ServiceError.internal("cannot remove the files of media \(id): \(error.detail)")
                }
                try c.query("DELETE FROM media_release WHERE id = \(id)")
            }
            try c.query("DELETE FROM erasure_media WHERE user_id = \(userId) AND media_id = \(id)")
        }
        return ids.count
    }
}
