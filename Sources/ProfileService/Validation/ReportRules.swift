import Foundation
import Messages
import Wire

/// The rules for a report and a resolution (API.md "Account lifecycle and moderation"), each
/// written once; like `ProfileRules`, each returns nil when the value is acceptable, else the
/// `FieldError` to report.
enum ReportRules {
    /// `target.type`: one of `Moderation.targetTypes`.
    static func targetType(_ value: String) -> FieldError? {
        Moderation.targetTypes.contains(value)
            ? nil : FieldError(field: "target.type", .invalidField, message: "must be user, post or comment")
    }

    /// `target.id`: 1–64 printable ASCII characters (every id this service hands out is shorter).
    static func targetId(_ value: String) -> FieldError? {
        (1...64).contains(value.utf8.count) && value.utf8.allSatisfy({ (0x21...0x7e).contains($0) })
            ? nil : FieldError(field: "target.id", .invalidField, message: "must be the id of a user, post or comment")
    }

    /// `reason`: one of `Moderation.reasons`.
    static func reason(_ value: String) -> FieldError? {
        Moderation.reasons.contains(value)
            ? nil
            : FieldError(
                field: "reason", .invalidField, message: "must be one of \(Moderation.reasons.joined(separator: ", "))")
    }

    /// `action`: one of `Moderation.actions`.
    static func action(_ value: String) -> FieldError? {
        Moderation.actions.contains(value)
            ? nil : FieldError(field: "action", .invalidField, message: "must be dismiss, remove_content or suspend_user")
    }

    /// A report's `comment` or a resolution's `note` (`field`): at most 1,000 characters, line
    /// breaks allowed. One of only whitespace and format characters counts as none.
    /// - Returns: the text to keep (trimmed; nil for none), or the error.
    static func freeText(_ value: String?, field: String) -> (text: String?, error: FieldError?) {
        guard let value, !TextRules.isBlank(value) else { return (nil, nil) }
        if let e = TextRules.noControlCharacters(value, field: field, allowNewline: true)
            ?? TextRules.maxLength(value, Moderation.maxCommentCharacters, field: field)
        {
            return (nil, e)
        }
        return (value.trimmingCharacters(in: .whitespacesAndNewlines), nil)
    }
}
