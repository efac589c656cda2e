import Shared

/// List cursors: the integer key (or seq) of the last item returned, as a decimal string; the
/// next page is everything strictly below it (`WHERE key < ?`), so items added while paging are
/// never repeated or skipped.
enum Cursor {
    /// The key to page below: `Int64.max` for no cursor.
    /// - Throws: `ServiceError` 400 `invalid_cursor` for anything but a positive integer.
    static func decode(_ cursor: String?) throws -> Int64 {
        guard let cursor else { return Int64.max }
        guard let key = Int64(cursor), key > 0 else {
            throw ServiceError.invalidCursor()
        }
        return key
    }

    static func encode(_ key: Int64) -> String { String(key) }

    /// The page size, 1...100 (the gateway validates; this only guards the service).
    static func clampLimit(_ limit: Int) -> Int { min(max(limit, 1), 100) }
}
