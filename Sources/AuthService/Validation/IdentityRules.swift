import Shared

/// Normalisation and validation of the identity fields; failures are `FieldError`s so a request
/// with several bad fields reports them all at once.
enum IdentityRules {
    /// Longest email accepted, in UTF-8 bytes (RFC 5321's path limit less the angle brackets).
    static let maxEmailBytes = 254

    /// Lower-cases `raw`; valid when 3–30 of `a-z 0-9 . _`.
    /// - Returns: the normalised username and, if invalid, an `invalid_username` error on `username`.
    static func username(_ raw: String) -> (value: String, error: FieldError?) {
        let value = raw.lowercased()
        let allowed = value.unicodeScalars.allSatisfy { s in
            ("a"..."z").contains(s) || ("0"..."9").contains(s) || s == "." || s == "_"
        }
        guard allowed, (3...30).contains(value.unicodeScalars.count) else {
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
        guard
            !value.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7f
            })
        else { return invalid }
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return invalid }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else { return invalid }
        return (value, nil)
    }

    /// Valid when at least 8 characters and at most `PasswordHasher.maxPasswordBytes` UTF-8 bytes.
    /// - Returns: `password_too_long` or `weak_password` on `password`, or nil.
    static func password(_ raw: String) -> FieldError? {
        if raw.utf8.count > PasswordHasher.maxPasswordBytes {
            return tooLong
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
