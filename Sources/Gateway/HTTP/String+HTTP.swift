// Text helpers for header values and error messages: RFC 9110 optional whitespace, and a
// client's text quoted visibly (and cut) in a problem's detail or `errors[].field`.

extension Substring {
    /// The text without leading and trailing optional whitespace: space and horizontal tab, the
    /// `OWS` of RFC 9110 §5.6.3 (Foundation's `trimmingCharacters(in: .whitespaces)` went through
    /// `NSString` and was 4 % of the gateway's CPU per authenticated request).
    func trimmingOptionalWhitespace() -> String {
        let isText = { (b: UInt8) in b != 0x20 && b != 0x09 }
        guard let first = utf8.firstIndex(where: isText), let last = utf8.lastIndex(where: isText) else { return "" }
        return String(Substring(utf8[first...last]))
    }
}

extension String {
    /// The text without leading and trailing optional whitespace (`Substring`'s).
    func trimmingOptionalWhitespace() -> String { self[...].trimmingOptionalWhitespace() }

    /// The text as a message can show it between backticks: visible characters as they are
    /// (Korean, accented letters, emoji), and as Swift's escapes (`\u{00A0}`, `\t`) every
    /// character that shows nothing or could be mistaken for another — controls, format
    /// characters, separators other than the space, private-use and unassigned code points — and
    /// the backslash and backtick that would make the quoting ambiguous; cut after `limit`
    /// scalars with `…`. So an invisible or oversized value a client sent is still readable in an
    /// error.
    func visibleForMessage(limit: Int = 64) -> String {
        var out = ""
        for (n, scalar) in unicodeScalars.enumerated() {
            if n == limit {
                out += "…"
                break
            }
            // Swift's escape leaves a backtick as it is: written as its code point instead.
            out +=
                Self.isPlainlyVisible(scalar)
                ? String(scalar) : scalar == "`" ? "\\u{60}" : scalar.escaped(asASCII: true)
        }
        return out
    }

    /// A client's member name as `errors[].field` carries it: as sent, or, past `limit` scalars,
    /// its first `limit` and `…` (a name that long is no field of ours, and echoing it whole
    /// would answer a 1 MB body with half a megabyte).
    func cutForField(limit: Int = 64) -> String {
        unicodeScalars.count > limit ? String(String.UnicodeScalarView(unicodeScalars.prefix(limit))) + "…" : self
    }

    private static func isPlainlyVisible(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return (0x20..<0x7f).contains(scalar.value) && scalar != "\\" && scalar != "`" }
        switch scalar.properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate,
            .unassigned, .nonspacingMark, .enclosingMark:
            return false
        default:
            return true
        }
    }
}
