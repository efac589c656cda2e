import Foundation
import Messages
import Wire

/// The rules for the fields ProfileService owns, each written once. Every rule returns nil when
/// the value is acceptable, or the `FieldError` to report; callers collect them all and answer
/// them together (`ServiceError.validation`).
enum ProfileRules {
    /// Genders the API accepts (API.md "Shapes").
    static let genders: Set<String> = ["female", "male", "custom", "prefer_not_to_say"]
    /// Longest name, in characters.
    static let maxName = 100
    /// Longest bio, in characters (Instagram's limit).
    static let maxBio = 150
    /// Longest phone number, in characters.
    static let maxPhone = 30
    /// Longest caption or comment, in characters (API.md: 1–2,200).
    static let maxText = 2_200
    /// Most users tagged in one post.
    static let maxTagged = 20

    /// Name: at most 100 characters, one line.
    static func name(_ value: String) -> FieldError? {
        TextRules.noControlCharacters(value, field: "name") ?? TextRules.maxLength(value, maxName, field: "name")
    }

    /// Bio: at most 150 characters; line breaks allowed.
    static func bio(_ value: String) -> FieldError? {
        TextRules.noControlCharacters(value, field: "bio", allowNewline: true)
            ?? TextRules.maxLength(value, maxBio, field: "bio")
    }

    /// Phone: 1–30 characters of digits, `+`, `-`, space and parentheses, with at least one digit.
    static func phone(_ value: String) -> FieldError? {
        let allowed = Set("0123456789+- ()")
        let ok =
            !value.isEmpty && value.count <= maxPhone && value.allSatisfy { allowed.contains($0) }
            && value.contains { $0.isASCII && $0.isNumber }
        return ok
            ? nil : FieldError(field: "phone", .invalidPhone, message: "up to \(maxPhone) of digits, + - space ( )")
    }

    /// Gender: one of `genders`.
    static func gender(_ value: String) -> FieldError? {
        genders.contains(value)
            ? nil
            : FieldError(
                field: "gender", .invalidGender, message: "must be female, male, custom or prefer_not_to_say")
    }

    /// Birth date: `YYYY-MM-DD`, a real calendar date from 1900-01-01 to today (UTC).
    static func birthDate(_ value: String, now: Date = Date()) -> FieldError? {
        let error = FieldError(
            field: "birthDate", .invalidBirthDate,
            message: "must be a real date from 1900-01-01 to today, as YYYY-MM-DD")
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard value.utf8.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            value.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") }),
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]), y >= 1900
        else { return error }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: y, month: m, day: d)
        guard components.isValidDate(in: calendar), let date = calendar.date(from: components) else { return error }
        return date <= now ? nil : error
    }

    /// An absolute http(s) URL (see `URLRules.httpURL`).
    static func url(_ value: String, field: String) -> FieldError? {
        URLRules.httpURL(value, field: field)
    }

    /// Caption: at most 2,200 characters; line breaks allowed.
    static func caption(_ value: String) -> FieldError? {
        TextRules.noControlCharacters(value, field: "caption", allowNewline: true)
            ?? TextRules.maxLength(value, maxText, field: "caption")
    }

    /// Comment text: 1–2,200 characters, not only whitespace and format or bidi characters
    /// (`TextRules.isBlank`); line breaks allowed.
    static func commentText(_ value: String) -> FieldError? {
        if TextRules.isBlank(value) {
            return FieldError(field: "text", .empty, message: "must not be empty")
        }
        return TextRules.noControlCharacters(value, field: "text", allowNewline: true)
            ?? TextRules.maxLength(value, maxText, field: "text")
    }

    /// Post type: `photo` or `video`.
    static func postType(_ value: String) -> FieldError? {
        value == "photo" || value == "video"
            ? nil : FieldError(field: "postType", .invalidPostType, message: "must be photo or video")
    }

    /// The registration's and the edit form's profile fields, every error at once.
    static func profileFields(name: String?, bio: String?, birthDate: String?, gender: String?) -> [FieldError] {
        [
            name.flatMap(Self.name), bio.flatMap(Self.bio), birthDate.flatMap { Self.birthDate($0) },
            gender.flatMap(Self.gender),
        ].compactMap { $0 }
    }
}
