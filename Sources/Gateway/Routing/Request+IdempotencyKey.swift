import Messages
import Wire

extension Request {
    /// The request's `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header-07 "Syntax"),
    /// nil without the header.
    ///
    /// The draft makes the field a Structured Field String (RFC 8941 §3.3.3, `"…"` with `\"` and
    /// `\\` escapes); the bare value most clients send (Stripe's style) is accepted too, so
    /// `"abc"` and `abc` are the same key. The field value, quotes included, is at most 255
    /// characters and the key 1–255 printable ASCII characters (`IdempotencyKey.problem`).
    /// - Throws: `Problem` 400 whose `errors` names `Idempotency-Key`: `invalid_field` for an
    ///   empty, too long or non-printable key or a malformed quoted string, `duplicate_header`
    ///   for the header sent twice.
    func idempotencyKey() throws -> String? {
        let values = http.headers.values("idempotency-key")
        guard let raw = values.first else { return nil }
        let name = IdempotencyKey.headerName
        guard values.count == 1 else {
            // Not a list: which key would count is ambiguous (as for Authorization).
            throw Problem(
                status: 400, code: .duplicateHeader, detail: "\(name) appears more than once",
                errors: [FieldError(field: name, code: .duplicateHeader, message: "may appear only once")])
        }
        // As sent (spaces and quotes included, as the OpenAPI schema counts), then without the
        // spaces around it (RFC 9110 §5.5); a tab stays and is refused as not printable.
        if raw.utf8.count > IdempotencyKey.maxLength {
            throw Problem.invalidField(name, "must be at most \(IdempotencyKey.maxLength) characters", code: .tooLong)
        }
        let value = raw.trimmingCharacters(in: [" "])
        let key: String
        if value.hasPrefix("\"") {
            guard let unquoted = Self.structuredFieldString(value) else {
                throw Problem.invalidField(name, "is not a valid quoted string (RFC 8941 §3.3.3)")
            }
            key = unquoted
        } else {
            key = value
        }
        if let error = IdempotencyKey.problem(key) { throw Problem.invalidField(error) }
        return key
    }

    /// The content of an RFC 8941 sf-string (`DQUOTE *(unescaped / "\" ( DQUOTE / "\" )) DQUOTE`,
    /// unescaped being printable ASCII but `"` and `\`), or nil when `value` is not exactly one.
    static func structuredFieldString(_ value: String) -> String? {
        var bytes = Array(value.utf8)
        guard bytes.count >= 2, bytes.first == 0x22, bytes.last == 0x22 else { return nil }
        bytes = Array(bytes[1..<(bytes.count - 1)])
        var out: [UInt8] = []
        var escaped = false
        for byte in bytes {
            if escaped {
                guard byte == 0x22 || byte == 0x5C else { return nil }
                out.append(byte)
                escaped = false
            } else if byte == 0x5C {
                escaped = true
            } else {
                guard byte != 0x22, (0x20...0x7E).contains(byte) else { return nil }
                out.append(byte)
            }
        }
        guard !escaped else { return nil }
        return String(decoding: out, as: UTF8.self)
    }
}
