import Foundation
import Wire

/// Opaque page cursors bound to the list that gave them out (API.md "Lists are cursor-paged").
///
/// A cursor names its list (`posts`, `followers`, ...), the list's owner (the user or post
/// whose list it is) and the monotonic integer key of the last item returned; the next page is
/// everything strictly beyond that key, so items added while paging are never repeated or
/// skipped. The token is `c1.` + base64url (RFC 4648 §5, no padding) of
/// `<list>\n<owner>\n<key>`: opaque to clients, readable in a log. A cursor used on another
/// list, or another owner's list, is 400 `invalid_cursor` naming the `cursor` field.
public enum PageCursor {
    static let prefix = "c1."

    /// The cursor for the item with `key` in `list` of `owner`.
    public static func encode(list: String, owner: String, key: Int64) -> String {
        encodeRaw("\(list)\n\(owner)\n\(key)")
    }

    /// The key a page continues after, or nil for the first page (no cursor).
    /// - Throws: `ServiceError` 400 `invalid_cursor` for a token this list of this owner did
    ///   not give out.
    public static func decode(_ token: String?, list: String, owner: String) throws -> Int64? {
        guard let parts = try fields(token, list: list, owner: owner, count: 3) else { return nil }
        guard let key = Int64(parts[2]), key > 0 else { throw ServiceError.invalidCursor() }
        return key
    }
}

extension PageCursor {
    /// The cursor for the item at `key` in `list` of `owner`, for a list paged against a
    /// snapshot `head` fixed by its first page (`<list>\n<owner>\n<key>\n<head>`).
    public static func encode(list: String, owner: String, key: Int64, head: Int64) -> String {
        encodeRaw("\(list)\n\(owner)\n\(key)\n\(head)")
    }

    /// The key and head a page continues after (`encode(list:owner:key:head:)`), nil for the
    /// first page. - Throws: `ServiceError` 400 `invalid_cursor` as `decode`.
    public static func decodeWithHead(_ token: String?, list: String, owner: String) throws -> (key: Int64, head: Int64)? {
        guard let parts = try fields(token, list: list, owner: owner, count: 4) else { return nil }
        guard let key = Int64(parts[2]), key > 0, let head = Int64(parts[3]), head >= 0 else {
            throw ServiceError.invalidCursor()
        }
        return (key, head)
    }

    private static func encodeRaw(_ text: String) -> String {
        prefix
            + Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The `count` newline-separated fields of `token` (base64url after `prefix`, at most 512
    /// bytes), checked to name `list` and `owner`; nil for no token.
    /// - Throws: `ServiceError` 400 `invalid_cursor`.
    private static func fields(_ token: String?, list: String, owner: String, count: Int) throws -> [Substring]? {
        guard let token else { return nil }
        guard token.hasPrefix(prefix), token.utf8.count <= 512 else { throw ServiceError.invalidCursor() }
        var base64 = String(token.dropFirst(prefix.count))
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8) else {
            throw ServiceError.invalidCursor()
        }
        let parts = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard parts.count == count else { throw ServiceError.invalidCursor() }
        guard parts[0] == list, parts[1] == owner else {
            throw ServiceError.invalidCursor("cursor belongs to another list")
        }
        return parts
    }
}

extension PageRequest {
    /// `limit` clamped to 1...100 (the gateway answers 400 outside that; this only guards the service).
    public var clampedLimit: Int { min(max(limit, 1), 100) }
}
