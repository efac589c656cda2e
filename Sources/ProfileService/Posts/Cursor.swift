import Shared

/// Opaque page cursors: the decimal string of the last returned row's monotonic integer key
/// (`posts.seq`, `likes.seq`, `comments.seq`). Because keys only grow, "rows after the cursor"
/// never repeats or skips a row while new rows are added.
enum Cursor {
    /// The key in `cursor`, or nil for the first page.
    /// - Throws: `ServiceError` 400 `invalid_cursor` for anything but a positive integer.
    static func decode(_ cursor: String?) throws -> Int64? {
        guard let cursor else { return nil }
        guard let key = Int64(cursor), key > 0 else {
            throw ServiceError.invalidCursor()
        }
        return key
    }

    /// The cursor for the row with `key`.
    static func encode(_ key: Int64) -> String { String(key) }

    /// The page size: `limit` clamped to 1...100.
    static func limit(_ page: PageRequest) -> Int { min(max(page.limit, 1), 100) }
}
