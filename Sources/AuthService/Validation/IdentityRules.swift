import Shared

/// Normalisation and validation of the identity fields; failures are `FieldError`s so a request
/// with several bad fields reports them all at once.
enum IdentityRules {
    /// Longest email accepted, in UTF-8 bytes (RFC 5321's path limit less the angle brackets).
    static let maxEmailBytes = 254

    /// Valid when the input itself is 3–30 of `a-z A-Z 0-9 . _` (checked before lower-casing, so
    /// no other character folds into the alphabet: the Kelvin sign U+212A lower-cases to `k`);
    /// stored lower-cased.
    /// - Returns: the normalised username and, if invalid, an `invalid_username` error on `username`.
    static func username(_ raw: String) -> (value: String, error: FieldError?) {
        let allowed = raw.unicodeScalars.allSatisfy { s in
            ("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s) || s == "." || s == "_"
        }
        let value = allowed ? raw.lowercased() : raw
        guard allowed, (3...30).contains(raw.unicodeScalars.count) else {
            return (
                value,
                FieldError(
                    field: "username", code: "invalid_username", message: "3 to 30 of a-z, 0-9, '.' and '_'")
            )
        }
        return (value, nil)
    }

    /// Trims whitespace and lower-cases `raw`; valid when at most 254 bytes, with exactly one `@`,
    /// a non-empty local part, a domain of non-empty dot-separated labels (at least two), and no
    /// whitespace or control characters.
    /// - Returns: the normalised email and, if invalid, an `invalid_email` error on `email`.
    static func email(_ raw: String) -> (value: String, error: FieldError?) {
        let value = raw.trimmingWhitespace().lowercased()
        let invalid = (
            value, FieldError(field: "email", code: "invalid_email", message: "not a valid email address")
        )
        guard value.utf8.count <= maxEmailBytes else {
            return (
                value,
                FieldError(
                    field: "email", code: "invalid_email", message: "at most \(maxEmailBytes) characters")
            )
        }
        guard !value.unicodeScalars.contains(where: { $0.properties.isWhitespace || TextRules.isControl($0) })
        else { return invalid }
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return invalid }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else { return invalid }
        return (value, nil)
    }

    /// Valid when at least 8 characters, at most `PasswordHasher.maxPasswordBytes` UTF-8 bytes,
    /// and without NUL (libsodium's and most clients' C strings end there).
    /// - Returns: `password_too_long`, `invalid_field` or `weak_password` on `password`, or nil.
    static func password(_ raw: String) -> FieldError? {
        if raw.utf8.count > PasswordHasher.maxPasswordBytes {
            return tooLong
        }
        if raw.utf8.contains(0) {
            return FieldError(field: "password", code: "invalid_field", message: "must not contain NUL characters")
        }
        if raw.count < 8 {
            return FieldError(field: "password", code: "weak_password", message: "at least 8 characters")
        }
        return nil
    }

    /// The error for a password over 1 KiB.
    static let tooLong = FieldError(
        field: "password", code: "password_too_long",
        message: "at most \(PasswordHasher.maxPasswordBytes) bytes")
}

extension String {
    /// The string without leading and trailing whitespace and newlines.
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}

extension ServiceError {
    /// AuthService's validation failure: the one field's own code when one field is wrong
    /// (`invalid_email`, `invalid_username`, `weak_password`, ... as API.md lists for register),
    /// `validation_failed` when several are.
    static func identityValidation(_ fields: [FieldError]) -> ServiceError {
        .validation(fields, code: fields.count == 1 ? fields[0].code : "validation_failed")
    }
}
