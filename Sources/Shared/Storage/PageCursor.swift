import CSodium
import Foundation
import Messages
import Wire

/// Opaque, authenticated page cursors bound to the list that gave them out (API.md "Lists are
/// cursor-paged": "Cursors are opaque and tamper-proof: one changed, forged, or taken from
/// another list or user is 400 `invalid_cursor`").
///
/// A cursor names its list (`posts`, `followers`, ...), the list's owner (the user or post whose
/// list it is) and the monotonic integer key of the last item returned (and, for a list paged
/// against a snapshot, the head its first page fixed); the next page is everything strictly
/// beyond that key, so items added while paging are never repeated or skipped.
///
/// The token is `c2.` + base64url (RFC 4648 §5, no padding) of a random 24-byte nonce and the
/// XChaCha20-Poly1305 encryption (libsodium's `crypto_aead_xchacha20poly1305_ietf`, RFC 8439
/// with the extended nonce) of `<list>\n<owner>\n<key>[\n<head>]` under the database's own
/// 32-byte key (`Database.pageCursors`, made once per database by `shared.2-page-cursor-key`).
/// So a client sees nothing of the row counters inside, cannot change them (a forged group
/// cursor with `head=0` would make a page redo every group lookup), and a cursor of another list
/// or owner, of another database (a replica of another service), or of an older format is
/// refused.
public struct PageCursor: Sendable {
    static let prefix = "c2."
    private let key: [UInt8]

    /// - Parameter key: 32 bytes (`crypto_aead_xchacha20poly1305_ietf_KEYBYTES`).
    /// - Precondition: `key.count == 32`.
    public init(key: [UInt8]) {
        precondition(key.count == 32, "a page cursor key has 32 bytes")
        precondition(sodium_init() >= 0, "libsodium failed to start")
        self.key = key
    }

    /// The cursor for the item with `key` in `list` of `owner`.
    public func encode(list: String, owner: String, key: Int64) -> String {
        seal("\(list)\n\(owner)\n\(key)")
    }

    /// The key a page continues after, or nil for the first page (no cursor).
    /// - Throws: `ServiceError` 400 `invalid_cursor` for a token this list of this owner did
    ///   not give out.
    public func decode(_ token: String?, list: String, owner: String) throws -> Int64? {
        guard let parts = try fields(token, list: list, owner: owner, count: 3) else { return nil }
        guard let key = Int64(parts[2]), key > 0 else { throw ServiceError.invalidCursor() }
        return key
    }

    /// The cursor for the item at `key` in `list` of `owner`, for a list paged against a
    /// snapshot `head` fixed by its first page.
    public func encode(list: String, owner: String, key: Int64, head: Int64) -> String {
        seal("\(list)\n\(owner)\n\(key)\n\(head)")
    }

    /// The key and head a page continues after (`encode(list:owner:key:head:)`), nil for the
    /// first page. - Throws: `ServiceError` 400 `invalid_cursor` as `decode`.
    public func decodeWithHead(_ token: String?, list: String, owner: String) throws -> (key: Int64, head: Int64)? {
        guard let parts = try fields(token, list: list, owner: owner, count: 4) else { return nil }
        guard let key = Int64(parts[2]), key > 0, let head = Int64(parts[3]), head >= 0 else {
            throw ServiceError.invalidCursor()
        }
        return (key, head)
    }

    /// The table of the database's cursor key (`page_cursor_key`, one row of 32 random bytes), made
    /// once per database: SQLite's `randomblob` (its CSPRNG), PostgreSQL's `gen_random_uuid()` twice
    /// (pg_strong_random, the OS CSPRNG; 244 random bits, the UUID version bits fixed). Every
    /// replica of a service shares its database's key, so a page another replica gave out
    /// continues here.
    public static let migrations = [
        Migration(
            "shared.2-page-cursor-key",
            sqlite: """
                CREATE TABLE page_cursor_key(id INTEGER PRIMARY KEY CHECK (id = 1), key BLOB NOT NULL);
                INSERT INTO page_cursor_key(id, key) VALUES (1, randomblob(32));
                """,
            postgres: """
                CREATE TABLE page_cursor_key(id INTEGER PRIMARY KEY CHECK (id = 1), key BYTEA NOT NULL);
                INSERT INTO page_cursor_key(id, key)
                    VALUES (1, decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
                """)
    ]

    /// The cursors of the database `connection` reaches (its key, read once).
    /// - Throws: `DatabaseError`, or `ServiceError` 500 when the key is missing or malformed.
    public static func load(on connection: DatabaseConnection) throws -> PageCursor {
        guard let row = try connection.queryOne("SELECT key FROM page_cursor_key WHERE id = 1"),
            case let key = try row.blob("key"), key.count == 32
        else { throw ServiceError.internal("the page cursor key is missing") }
        return PageCursor(key: key)
    }

    static let nonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagBytes = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// `prefix` + base64url(nonce ‖ ciphertext ‖ tag) of `text`.
    private func seal(_ text: String) -> String {
        let message = Array(text.utf8)
        var sealed = [UInt8](repeating: 0, count: Self.nonceBytes + message.count + Self.tagBytes)
        sealed.withUnsafeMutableBufferPointer { out in
            let nonce = out.baseAddress!
            randombytes_buf(nonce, Self.nonceBytes)
            var length: UInt64 = 0
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                nonce + Self.nonceBytes, &length, message, UInt64(message.count), nil, 0, nil, nonce, key)
        }
        return Self.prefix
            + Data(sealed).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The `count` newline-separated fields of `token` (at most 512 bytes), opened with the key
    /// and checked to name `list` and `owner`; nil for no token.
    /// - Throws: `ServiceError` 400 `invalid_cursor`.
    private func fields(_ token: String?, list: String, owner: String, count: Int) throws -> [Substring]? {
        guard let token else { return nil }
        guard token.hasPrefix(Self.prefix), token.utf8.count <= 512 else { throw ServiceError.invalidCursor() }
        var base64 = String(token.dropFirst(Self.prefix.count))
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.utf8.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64), data.count > Self.nonceBytes + Self.tagBytes else {
            throw ServiceError.invalidCursor()
        }
        let sealed = [UInt8](data)
        var message = [UInt8](repeating: 0, count: sealed.count - Self.nonceBytes - Self.tagBytes)
        var length: UInt64 = 0
        let opened = sealed.withUnsafeBufferPointer { input in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &message, &length, nil, input.baseAddress! + Self.nonceBytes, UInt64(sealed.count - Self.nonceBytes), nil,
                0, input.baseAddress!, key)
        }
        guard opened == 0, let text = String(validating: message.prefix(Int(length)), as: UTF8.self) else {
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
