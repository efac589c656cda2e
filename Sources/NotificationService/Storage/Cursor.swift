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
            throw ServiceError.badRequest(
                "invalid_cursor", "cursor is not one this list gave out",
                fields: [FieldError(field: "cursor", code: "invalid_cursor", message: "cursor is not one this list gave out")])
        }
        return key
    }

    static func encode(_ key: Int64) -> String { String(key) }

    /// The page size, 1...100 (the gateway validates; this only guards the service).
    static func clampLimit(_ limit: Int) -> Int { min(max(limit, 1), 100) }
}

extension SQLiteConnection {
    /// Runs `body` inside `BEGIN`…`COMMIT` on a read connection, so its statements see one snapshot.
    func snapshot<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
