import Media
import Messages
import Wire

/// What makes two requests with one `Idempotency-Key` the same request: the draft's
/// "Idempotency Fingerprint" (draft-ietf-httpapi-idempotency-key-header-07), here the SHA-256
/// (FIPS 180-4, libsodium's `crypto_hash_sha256`) of the message type and the request's wire JSON
/// (the key included: only requests with the same key are compared), and for an upload the
/// SHA-256 of its bytes after them.
///
/// The wire JSON has sorted members and no absent optionals, so it is canonical for one message:
/// a client that sends its retry with members in another order, or `caption: null` for none,
/// sends the same request; a comment on another post (the path's id is in the request) does not.
enum RequestFingerprint {
    /// The fingerprint of `request` of type `R`, and of the bytes whose SHA-256 is `bytesDigest`
    /// when given: 64 lowercase hex digits.
    /// - Throws: an encoding error (a programming error: requests always encode).
    static func of<R: RPC>(_ rpc: R.Type, _ request: R.Request, bytesDigest: String? = nil) throws -> String {
        var text = Array(R.type.utf8)
        text.append(0x0A)
        text += try WireJSON.encode(request)
        if let bytesDigest {
            text.append(0x0A)
            text += Array(bytesDigest.utf8)
        }
        return sha256(text)
    }

    /// SHA-256 of `bytes`, 64 lowercase hex digits.
    static func sha256(_ bytes: [UInt8]) -> String { MediaID.sha256Hex(bytes) }
}
