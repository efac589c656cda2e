import Wire

/// Building blocks for the field rules each service keeps for the fields it owns: every rule
/// returns nil when the value is acceptable, or the `FieldError` to report, so a request with
/// several bad fields reports them all at once (`ServiceError.validation`).
public enum TextRules {
    /// Whether `scalar` is a C0 control (U+0000–U+001F), DEL (U+007F) or a C1 control
    /// (U+0080–U+009F) (Unicode general category Cc).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
    }

    /// Whether `scalar` is a format character (Unicode general category Cf): zero-width
    /// characters (U+200B–U+200D, U+FEFF), the bidi embeddings, overrides and isolates
    /// (U+202A–U+202E, U+2066–U+2069), soft hyphen, ... — invisible, and able to make two
    /// identities look alike or reorder what is shown.
    public static func isFormat(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .format
    }

    /// Whether `value` shows nothing: only whitespace, newlines and format characters (a text
    /// made only of U+200B or U+202E is empty).
    public static func isBlank(_ value: String) -> Bool {
        value.unicodeScalars.allSatisfy { $0.properties.isWhitespace || isFormat($0) }
    }

    /// Refuses control characters (see `isControl`), except `\n` when `allowNewline` (bio,
    /// caption and comment text are multi-line).
    /// - Returns: `invalid_field` naming the first one found, or nil.
    public static func noControlCharacters(_ value: String, field: String, allowNewline: Bool = false) -> FieldError? {
        guard let bad = value.unicodeScalars.first(where: { isControl($0) && !(allowNewline && $0 == "\n") }) else {
            return nil
        }
        let code = String(bad.value, radix: 16, uppercase: true)
        return FieldError(
            field: field, .invalidField,
            message: "must not contain control characters (found U+\(String(repeating: "0", count: 4 - code.count))\(code))"
        )
    }

    /// Code points a character may take on average under `maxLength`: the longest emoji
    /// sequences in use (a kiss with two skin tones) take 10.
    public static let maxScalarsPerCharacter = 16

    /// Refuses a value longer than `max` characters (extended grapheme clusters, what a user
    /// counts), or longer than `max × maxScalarsPerCharacter` Unicode code points (one
    /// "character" of 150,000 combining marks is one grapheme cluster), with code `too_long`.
    public static func maxLength(_ value: String, _ max: Int, field: String) -> FieldError? {
        value.unicodeScalars.count <= max * maxScalarsPerCharacter && value.count <= max
            ? nil : FieldError(field: field, .tooLong, message: "must be at most \(max) characters")
    }
}
