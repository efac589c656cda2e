import Foundation
import Messages
import Storage

/// One `media` row: an upload by one user.
struct MediaRecord: Sendable, RowDecodable, Equatable {
    /// SHA-256 of the upload, 64 lowercase hex digits.
    var id: String
    var ownerId: String
    /// `photo` or `video`.
    var kind: String
    /// Pixels, upright.
    var width: Int
    var height: Int
    var durationMs: Int?
    /// RFC 3339.
    var createdAt: String

    init(id: String, ownerId: String, kind: String, width: Int, height: Int, durationMs: Int?, createdAt: String) {
        self.id = id
        self.ownerId = ownerId
        self.kind = kind
        self.width = width
        self.height = height
        self.durationMs = durationMs
        self.createdAt = createdAt
    }

    init(row: Row) throws {
        id = try row.string("id")
        ownerId = try row.string("owner_id")
        kind = try row.string("kind")
        width = try row.int("width")
        height = try row.int("height")
        durationMs = try row.optionalInt64("duration_ms").map { Int($0) }
        createdAt = try row.string("created_at")
    }

    static let columns: SQL = "id, owner_id, kind, width, height, duration_ms, created_at"

    /// The variant a post's `mediaURL` shows: `1080`, or a video's `original`.
    var mainVariant: String { kind == "video" ? "original" : "1080" }

    /// The API's `Media`.
    var media: Profile.Media {
        Profile.Media(
            id: id, kind: kind, url: Profile.Media.path(id: id, variant: mainVariant),
            thumbnailURL: Profile.Media.path(id: id, variant: "square320"), width: width, height: height,
            durationMs: durationMs)
    }
}

/// Uploads and their references (`media`, `media_release`): every statement on those tables.
///
/// Media files are removed only by `collect`, inside the write transaction that deletes the
/// rows, so an upload of the same bytes (which inserts its row before writing files) either
/// keeps the files or writes them again after.
protocol MediaRecordStore: Sendable {
    /// Records `ownerId`'s upload (again: the row is refreshed as a fresh, unattached upload) and
    /// schedules a look at it once the grace period is over.
    /// - Parameter nowMs: the upload's time, ms since 1970.
    func claim(_ record: MediaRecord, nowMs: Int64, graceMs: Int64) async throws

    /// Forgets an upload whose files could not be written (and nothing else uses).
    func unclaim(id: String, ownerId: String) async throws

    /// `ownerId`'s upload with `id`, or nil.
    func owned(id: String, ownerId: String) async throws -> MediaRecord?

    /// Whether anyone uploaded `id` (it may be read).
    func exists(id: String) async throws -> Bool

    /// Whether media `id` may be served: false when only suspended or deleted accounts hold it
    /// (`AccountStates.mediaShown`).
    func isShown(id: String) async throws -> Bool

    /// Removes the media due for a look that nothing uses: no post, no profile photo, no fresh
    /// unattached upload (younger than `graceMs`). `remove` deletes an id's files and runs inside
    /// the transaction that deletes its rows; when it throws, the rows stay and the id is looked at
    /// again an hour later. At most `limit` ids per call.
    /// - Returns: the ids removed.
    func collect(nowMs: Int64, graceMs: Int64, limit: Int, remove: @escaping @Sendable (String) throws -> Void)
        async throws -> [String]
}

/// `MediaRecordStore` on a SQL `Database`, either engine; the statements other stores run in their own transactions
/// (attach, release) are static here so the SQL stays in one place.
struct SQLMediaRecordStore: MediaRecordStore {
    let database: Database

    /// When media whose files could not be removed is looked at again, in ms.
    static let retryDelayMs: Int64 = 3_600_000

    /// Marks `ownerId`'s upload `id` as used by a post or profile photo.
    /// - Returns: the record, or nil when `ownerId` has no such upload.
    static func attach(id: String, ownerId: String, on c: DatabaseConnection) throws -> MediaRecord? {
        guard
            let record = try c.queryOne(
                MediaRecord.self, "SELECT \(MediaRecord.columns) FROM media WHERE id = \(id) AND owner_id = \(ownerId)")
        else { return nil }
        try c.query("UPDATE media SET attached = 1 WHERE id = \(id) AND owner_id = \(ownerId)")
        return record
    }

    /// Schedules a look at `id`, which may have lost its last reference, at `dueMs` (or sooner, if
    /// a look is already due sooner: a look only ever keeps what is used).
    static func release(id: String, dueMs: Int64, on c: DatabaseConnection) throws {
        try c.query(
            """
            INSERT INTO media_release(id, due_ms) VALUES (\(id), \(dueMs))
            ON CONFLICT(id) DO UPDATE SET due_ms = \(SQL.least)(media_release.due_ms, excluded.due_ms)
            """)
    }

    func claim(_ record: MediaRecord, nowMs: Int64, graceMs: Int64) async throws {
        try await database.write { tx in
            try tx.query(
                """
                INSERT INTO media(id, owner_id, kind, width, height, duration_ms, created_at, created_ms, attached)
                VALUES (\(record.id), \(record.ownerId), \(record.kind), \(record.width), \(record.height),
                    \(record.durationMs.map { Int64($0) }), \(record.createdAt), \(nowMs), 0)
                ON CONFLICT(id, owner_id) DO UPDATE SET created_at = excluded.created_at,
                    created_ms = excluded.created_ms, attached = 0
                """)
            try Self.release(id: record.id, dueMs: nowMs + graceMs, on: tx.connection)
        }
    }

    func unclaim(id: String, ownerId: String) async throws {
        _ = try await database.write { tx in
            try tx.query("DELETE FROM media WHERE id = \(id) AND owner_id = \(ownerId) AND attached = 0")
        }
    }

    func owned(id: String, ownerId: String) async throws -> MediaRecord? {
        try await database.read { c in
            try c.queryOne(
                MediaRecord.self, "SELECT \(MediaRecord.columns) FROM media WHERE id = \(id) AND owner_id = \(ownerId)")
        }
    }

    func exists(id: String) async throws -> Bool {
        try await database.read { try $0.exists("SELECT 1 FROM media WHERE id = \(id)") }
    }

    func isShown(id: String) async throws -> Bool {
        try await database.read { try AccountStates.mediaShown(id, on: $0) }
    }

    func collect(nowMs: Int64, graceMs: Int64, limit: Int, remove: @escaping @Sendable (String) throws -> Void)
        async throws -> [String]
    {
        try await database.write { tx in
            let c = tx.connection
            // Claimed: a replica collecting at the same time (after a release it served) skips
            // the rows this one holds rather than removing the same files.
            let due = try c.query(
                "SELECT id FROM media_release WHERE due_ms <= \(nowMs) ORDER BY due_ms LIMIT \(limit)\(SQL.forUpdateSkipLocked)"
            )
            .map { try $0.string("id") }
            var removed: [String] = []
            for id in due {
                try c.query("DELETE FROM media_release WHERE id = \(id)")
                // PostgreSQL: the id's rows locked first, so a replica attaching or claiming them
                // right now commits before the checks below read (they see its post or upload).
                // (SQLite: a read; the one writer already excludes every other.)
                try c.query("SELECT id FROM media WHERE id = \(id)\(SQL.forUpdate)")
                // Used by a post or profile: looked at again when one of them lets go.
                let used =
                    try c.exists("SELECT 1 FROM posts WHERE media_id = \(id)")
                    || c.exists("SELECT 1 FROM profiles WHERE photo_media_id = \(id)")
                if used { continue }
                // A fresh upload nothing used yet: looked at again when its grace period ends.
                if let newest = try c.scalar(
                    "SELECT max(created_ms) FROM media WHERE id = \(id) AND attached = 0 AND created_ms > \(nowMs - graceMs)")
                {
                    try Self.release(id: id, dueMs: newest + graceMs, on: c)
                    continue
                }
                // Files first: if they cannot all be removed, the rows stay and the id is looked at
                // again in an hour, instead of failing the whole batch every time.
                do { try remove(id) } catch {
                    try Self.release(id: id, dueMs: nowMs + Self.retryDelayMs, on: c)
                    continue
                }
                try c.query("DELETE FROM media WHERE id = \(id)")
                removed.append(id)
            }
            return removed
        }
    }
}
