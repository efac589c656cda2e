import Foundation
import Shared

/// Field-level validation rules. Each returns nil when the value is acceptable, or the
/// `FieldError` to report; callers collect every error and answer them together
/// (`ServiceError.validation`).
enum FieldRules {
    /// Genders the API accepts.
    static let genders: Set<String> = ["female", "male", "custom", "prefer_not_to_say"]
    /// Longest name, in characters.
    static let maxName = 100
    /// Longest bio, in characters.
    static let maxBio = 150
    /// Longest phone number, in characters.
    static let maxPhone = 30
    /// Longest caption or comment, in characters.
    static let maxText = 2_200

    /// Name: at most 100 characters.
    static func name(_ value: String) -> FieldError? {
        value.count <= maxName
            ? nil : FieldError(field: "name", code: "too_long", message: "at most \(maxName) characters")
    }

    /// Bio: at most 150 characters.
    static func bio(_ value: String) -> FieldError? {
        value.count <= maxBio
            ? nil : FieldError(field: "bio", code: "too_long", message: "at most \(maxBio) characters")
    }

    /// Phone: 1–30 characters of digits, `+`, `-`, space and parentheses, with at least one digit.
    static func phone(_ value: String) -> FieldError? {
        let allowed = Set("0123456789+- ()")
        let ok =
            !value.isEmpty && value.count <= maxPhone && value.allSatisfy { allowed.contains($0) }
            && value.contains { $0.isNumber }
        return ok
            ? nil
            : FieldError(
                field: "phone", code: "invalid_phone", message: "up to \(maxPhone) of digits, + - space ( )"
            )
    }

    /// Gender: one of `genders`.
    static func gender(_ value: String) -> FieldError? {
        genders.contains(value)
            ? nil
            : FieldError(
                field: "gender", code: "invalid_gender",
                message: "one of female, male, custom, prefer_not_to_say")
    }

    /// Birth date: `YYYY-MM-DD`, a real calendar date, not in the future (UTC), year 1900 or later.
    static func birthDate(_ value: String, now: Date = Date()) -> FieldError? {
        let error = FieldError(
            field: "birthDate", code: "invalid_birth_date", message: "a past date as YYYY-MM-DD")
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard value.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2,
            parts[2].count == 2,
            value.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }),
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]), y >= 1900
        else { return error }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: y, month: m, day: d)
        guard components.isValidDate(in: calendar), let date = calendar.date(from: components) else {
            return error
        }
        return date <= now ? nil : error
    }

    /// An absolute http(s) URL with a host (checked with `URLComponents`).
    static func httpURL(_ value: String, field: String) -> FieldError? {
        let error = FieldError(field: field, code: "invalid_url", message: "an absolute http(s) URL")
        guard value.count <= 2_048, let c = URLComponents(string: value),
            let scheme = c.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = c.host, !host.isEmpty
        else { return error }
        return nil
    }

    /// Username as AuthService accepts it: 3–30 of `a-z 0-9 . _` (after lower-casing).
    static func username(_ value: String) -> FieldError? {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789._")
        let ok = (3...30).contains(value.count) && value.allSatisfy { allowed.contains($0) }
        return ok
            ? nil
            : FieldError(field: "username", code: "invalid_username", message: "3–30 of a-z 0-9 . _")
    }

    /// Email as AuthService accepts it: at most 254 UTF-8 bytes, exactly one `@`, a non-empty
    /// local part, a domain of at least two non-empty dot-separated labels, no whitespace or
    /// control characters.
    static func email(_ value: String) -> FieldError? {
        let error = FieldError(field: "email", code: "invalid_email", message: "not a valid email address")
        guard value.utf8.count <= 254,
            !value.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7f })
        else { return error }
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return error }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else { return error }
        return nil
    }

    /// Caption: at most 2,200 characters.
    static func caption(_ value: String) -> FieldError? {
        value.count <= maxText
            ? nil
            : FieldError(field: "caption", code: "too_long", message: "at most \(maxText) characters")
    }

    /// Comment text: 1–2,200 characters and not only whitespace.
    static func commentText(_ value: String) -> FieldError? {
        if value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            return FieldError(field: "text", code: "empty", message: "must not be empty")
        }
        return value.count <= maxText
            ? nil : FieldError(field: "text", code: "too_long", message: "at most \(maxText) characters")
    }

    /// Post type: `photo` or `video`.
    static func postType(_ value: String) -> FieldError? {
        value == "photo" || value == "video"
            ? nil : FieldError(field: "postType", code: "invalid_post_type", message: "photo or video")
    }
}
