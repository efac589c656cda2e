import Foundation
import Messages
import Wire

/// Normalisation and validation of the identity fields; failures are `FieldError`s so a request
/// with several bad fields reports them all at once.
enum IdentityRules {
    /// Longest email accepted, in UTF-8 bytes (RFC 5321's path limit less the angle brackets).
    static let maxEmailBytes = 254

    /// Valid when the input itself is 3–30 of `a-z A-Z 0-9 . _` (checked before lower-casing, so
    /// no other character folds into the alphabet: the Kelvin sign U+212A lower-cases to `k`);
    /// stored lower-cased. At least one letter or digit: a name of only `.` and `_` names
    /// nobody a reader can tell apart. (The alphabet leaves out every format character.)
    /// - Returns: the normalised username and, if invalid, an `invalid_username` error on `username`.
    static func username(_ raw: String) -> (value: String, error: FieldError?) {
        let allowed =
            raw.unicodeScalars.allSatisfy { s in
                ("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s) || s == "." || s == "_"
            } && raw.unicodeScalars.contains { $0 != "." && $0 != "_" }
        let value = allowed ? raw.lowercased() : raw
        guard allowed, (3...30).contains(raw.unicodeScalars.count) else {
            return (
                value,
                FieldError(
                    field: "username", .invalidUsername, message: "3 to 30 of a-z, 0-9, '.' and '_'")
            )
        }
        return (value, nil)
    }

    /// Trims whitespace, lower-cases `raw` and puts it in Unicode Normalization Form C (UAX #15),
    /// so `é` typed precomposed or as `e` + U+0301 is one address for uniqueness and login; valid
    /// when at most 254 bytes, with exactly one `@`, a non-empty local part, a domain of
    /// non-empty dot-separated labels (at least two), no whitespace, control or format
    /// characters (`TextRules.isFormat`: zero-width, bidi overrides), and no domain label mixing
    /// letters of Latin, Greek and Cyrillic (a homoglyph such as `pаypal` with a Cyrillic `а`;
    /// UTS #39 §5.1's "single script" restriction, for those three scripts).
    /// - Returns: the normalised email and, if invalid, an `invalid_email` error on `email`.
    static func email(_ raw: String) -> (value: String, error: FieldError?) {
        let value = normalizedEmail(raw)
        let invalid = (
            value, FieldError(field: "email", .invalidEmail, message: "not a valid email address")
        )
        guard value.utf8.count <= maxEmailBytes else {
            return (
                value,
                FieldError(
                    field: "email", .invalidEmail, message: "at most \(maxEmailBytes) characters")
            )
        }
        guard
            !value.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || TextRules.isControl($0) || TextRules.isFormat($0)
            })
        else { return invalid }
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return invalid }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else { return invalid }
        guard labels.allSatisfy({ Set($0.unicodeScalars.compactMap(confusableScript)).count <= 1 }) else {
            return (
                value,
                FieldError(field: "email", .invalidEmail, message: "a domain label mixes alphabets")
            )
        }
        return (value, nil)
    }

    /// An email as stored and looked up: trimmed, lower-cased, NFC.
    static func normalizedEmail(_ raw: String) -> String {
        raw.trimmingWhitespace().lowercased().precomposedStringWithCanonicalMapping
    }

    /// The script of a letter of Latin, Greek or Cyrillic, the alphabets whose letters look
    /// alike; nil for anything else (digits, `-`, other scripts).
    private static func confusableScript(_ s: Unicode.Scalar) -> Int? {
        guard s.properties.isAlphabetic else { return nil }
        switch s.value {
        case 0x41...0x5A, 0x61...0x7A, 0xC0...0x24F, 0x1E00...0x1EFF: return 0  // Latin
        case 0x370...0x3FF, 0x1F00...0x1FFF: return 1  // Greek
        case 0x400...0x52F: return 2  // Cyrillic
        default: return nil
        }
    }

    /// Valid when at least 8 characters, at most `PasswordHasher.maxPasswordBytes` UTF-8 bytes,
    /// and without NUL (libsodium's and most clients' C strings end there).
    /// - Returns: `password_too_long`, `invalid_field` or `weak_password` on `password`, or nil.
    static func password(_ raw: String) -> FieldError? {
        if raw.utf8.count > PasswordHasher.maxPasswordBytes {
            return tooLong
        }
        if raw.utf8.contains(0) {
            return FieldError(field: "password", .invalidField, message: "must not contain NUL characters")
        }
        if raw.count < 8 {
            return FieldError(field: "password", .weakPassword, message: "at least 8 characters")
        }
        return nil
    }

    /// The error for a password over 1 KiB.
    static let tooLong = FieldError(
        field: "password", .passwordTooLong,
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
