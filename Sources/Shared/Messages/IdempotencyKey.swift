import Wire

/// The `Idempotency-Key` request header field, as the gateway accepts it and ProfileService
/// stores it (draft-ietf-httpapi-idempotency-key-header-07, "The Idempotency-Key HTTP Header
/// Field"; API.md "Idempotent writes").
///
/// A client sends a unique key (a UUID, say) with a non-idempotent request and the same key
/// with each retry of it. The same key from the same user within `retentionMs` gets the first
/// request's result without the write being applied again; the same key with a different
/// request is 422 `idempotency_key_reused`; a key whose first request is still being processed
/// is 409 `idempotency_key_in_use` (the draft's "Error Scenarios"). Keys are scoped to the user
/// who sent them: two users' equal keys are unrelated.
public enum IdempotencyKey {
    /// The header's name, as problems name it.
    public static let headerName = "Idempotency-Key"
    /// The longest key, in characters (printable ASCII, so also bytes): 255.
    public static let maxLength = 255
    /// How long a key and its first result are kept, in ms: 24 h (the draft's "Idempotency Key
    /// Validity and Expiry" leaves the period to the resource, which publishes it).
    public static let retentionMs: Int64 = 24 * 3_600_000

    /// Why `key` cannot be a key, or nil when it can: 1 to `maxLength` printable ASCII
    /// characters (U+0020–U+007E).
    /// - Returns: a field error naming the header: `empty`, `too_long` or `invalid_field`.
    public static func problem(_ key: String) -> FieldError? {
        if key.isEmpty {
            return FieldError(field: headerName, .empty, message: "must not be empty")
        }
        if key.utf8.count > maxLength {
            return FieldError(field: headerName, .tooLong, message: "must be at most \(maxLength) characters")
        }
        if !key.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) {
            return FieldError(field: headerName, .invalidField, message: "must be printable ASCII")
        }
        return nil
    }
}
