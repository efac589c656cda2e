import Foundation
import Support
import Wire

/// The operator's list of objectionable terms and the one matcher every service that accepts
/// user text applies to it (API.md "Privacy and safety", "Objectionable material"; Apple's App
/// Review Guideline 1.2 asks for "a method for filtering objectionable material from being
/// posted"): AuthService for usernames, ProfileService for names, bios, captions and comments.
/// A text containing a listed term is refused with 422 `objectionable_content` naming the field
/// (`check`, `checkUsername`, `ServiceError.objectionableContent`).
///
/// **The file** (`MODERATION_WORDS_FILE`): UTF-8, one term a line; blank lines and lines starting
/// with `#` are ignored, as is a byte order mark. A term is one or more words separated by
/// spaces (a phrase); a word is letters, combining marks and digits. A term ending in `*` also
/// matches any word that begins with its last word (`바보*` refuses `바보야`, `바보를`: Korean
/// attaches its particles to the word). Anything else in a term (punctuation, symbols, emoji) is
/// refused when the list is loaded, since it could never match a word, and dropping it would
/// silently turn `a$$` into the term `a`.
///
/// **Folding**: the list and every text are compared after `fold`, an approximation of Unicode's
/// NFKC_Casefold (UAX #44 §5.7.4; Unicode Standard §3.13, "toNFKC_Casefold"): NFKC (UAX #15:
/// full-width `ＢＡＤ` is `BAD`, `ﬁ` is `fi`, Hangul jamo compose into syllables, half-width
/// jamo become ordinary ones), then full case folding (CaseFolding.txt: `ß` and `ẞ` fold to `ss`,
/// final `ς` to `σ`, which `lowercased()` would keep apart), NFKC again, and the
/// Default_Ignorable_Code_Point characters removed (soft hyphen, zero-width space and joiners,
/// variation selectors), so `bad\u{AD}word` is `badword`. Foundation's
/// `folding(options: .caseInsensitive, locale: nil)` does the full case folding,
/// locale-independently (no Turkish dotless-i rule); where it differs from CaseFolding.txt
/// (Cherokee small letters fold to themselves instead of to capitals) both sides still fold
/// alike, which is all the comparison needs.
///
/// **Words**: a text is cut into words at every character that is not a letter, mark or digit
/// (Unicode general categories L, M, N): spaces, punctuation, symbols, emoji, `.` and `_`. A term
/// matches where its words occur consecutively in the text's words, so `BadWord!`, `ＢＡＤＷＯＲＤ`
/// and `the badword's` match `badword` while `badwordsmith` does not, and `bad, word` matches
/// the phrase `bad word`. Whole words, not substrings: the Scunthorpe problem (and in Korean,
/// `시발점`, "starting point", which contains a common curse) is why. As UAX #29's default
/// word boundaries do, each ideograph (Han) and each Hiragana character is a word of its own:
/// Chinese and Japanese do not put spaces between words, so a term of several ideographs
/// matches as a phrase inside a run of them. Hangul and Katakana run on as letters.
///
/// **Usernames** (`a-z 0-9 . _`, no spaces) match differently (`firstMatch(inUsername:)`): a
/// username's parts are its runs of letters and its runs of digits, so `.`, `_` and a change
/// between letters and digits separate parts; a term matches when its parts occur as
/// consecutive parts of the name (`the_badword`, `badword99`, `bad.word` for the phrase
/// `bad word`), or when the name's letters alone, without its separators and digits, spell the
/// term (`b.a.d.w.o.r.d`, `bad_word`, `bad_word99` all spell `badword`; a term with digits must
/// be spelled with them: `2_g_1_c` spells `2g1c`, `g.c` does not). Leetspeak (`b4dword`) is not
/// undone.
///
/// Not covered, as with any list: misspellings, spacing inside a word (`b a d w o r d`, unless
/// listed as a phrase), words written without spaces in scripts that need a dictionary to find
/// word boundaries (Thai), and homoglyphs from other scripts (a Cyrillic `а` in `bаdword`).
public struct WordList: Sendable {
    /// The environment variable naming the list's file.
    public static let variable = "MODERATION_WORDS_FILE"

    /// No terms: nothing is refused (the variable unset).
    public static let empty = WordList(terms: [])

    /// A term as compiled: its words (folded), whether its last word is a prefix, and the line as
    /// the file had it.
    struct Term: Sendable {
        var words: [String]
        var prefix: Bool
        var source: String
    }

    /// The terms indexed for one way of cutting texts into words.
    struct Index: Sendable {
        /// Terms by their first word, except single-word prefixes.
        var byFirstWord: [String: [Term]] = [:]
        /// Single-word prefix terms by their word.
        var byPrefix: [String: Term] = [:]
        /// The longest word of `byPrefix`, in characters.
        var longestPrefix = 0

        init(_ terms: [Term]) {
            for term in terms {
                if term.prefix && term.words.count == 1 {
                    byPrefix[term.words[0]] = term
                    longestPrefix = max(longestPrefix, term.words[0].count)
                } else {
                    byFirstWord[term.words[0], default: []].append(term)
                }
            }
        }

        /// The first term whose words occur consecutively in `words`, or nil.
        func firstMatch(in words: [String]) -> Term? {
            for i in words.indices {
                for term in byFirstWord[words[i]] ?? [] where Self.matches(term, words, at: i) { return term }
                if longestPrefix > 0, let term = Self.prefixMatch(words[i], in: byPrefix, longest: longestPrefix) {
                    return term
                }
            }
            return nil
        }

        /// Whether `term`'s words are `words[start...]`'s first ones (the last one as a prefix
        /// for a prefix term).
        static func matches(_ term: Term, _ words: [String], at start: Int) -> Bool {
            guard start + term.words.count <= words.count else { return false }
            for (k, word) in term.words.enumerated() {
                let candidate = words[start + k]
                let last = k == term.words.count - 1
                if last && term.prefix ? !candidate.hasPrefix(word) : candidate != word { return false }
            }
            return true
        }

        /// The prefix term that `word` begins with, trying its prefixes up to `longest`
        /// characters (extended grapheme clusters, so a base letter never matches without its
        /// accent).
        static func prefixMatch(_ word: String, in terms: [String: Term], longest: Int) -> Term? {
            var prefix = ""
            for character in word.prefix(longest) {
                prefix.append(character)
                if let term = terms[prefix] { return term }
            }
            return nil
        }
    }

    /// Terms for free text (captions, comments, bios, names).
    private let text: Index
    /// Terms cut into username parts (letters and digits apart).
    private let username: Index
    /// Terms by their spelling (`spelling`): what a username's letters may spell. Single-word
    /// prefix terms are in `usernameSpellingPrefixes`.
    private let usernameSpellings: [String: Term]
    private let usernameSpellingPrefixes: [String: Term]
    private let longestSpellingPrefix: Int

    /// How many terms the list holds.
    public let count: Int

    /// Whether the list holds no term (nothing is refused).
    public var isEmpty: Bool { count == 0 }

    /// A term of the file that cannot be used.
    public struct InvalidTerm: Error, CustomStringConvertible, Equatable {
        /// 1-based line number in the file (or position in the list given).
        public var line: Int
        /// The line, trimmed.
        public var term: String
        /// What is wrong with it.
        public var reason: String
        public var description: String { "line \(line) (\(term.debugDescription)): \(reason)" }
    }

    /// Compiles `terms` (file lines: blank ones and `#` comments are skipped).
    /// - Throws: `InvalidTerm` for a term with no word, or with a character that is not a
    ///   letter, mark, digit or space (a final `*` aside).
    public init(lines: some Sequence<some StringProtocol>) throws(InvalidTerm) {
        var compiled: [Term] = []
        for (offset, raw) in lines.enumerated() {
            let line = String(raw).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            compiled.append(try Self.compile(line, line: offset + 1))
        }
        self.init(terms: compiled)
    }

    private init(terms: [Term]) {
        text = Index(terms)
        username = Index(
            terms.compactMap { term in
                let parts = term.words.flatMap(Self.usernameParts)
                return parts.isEmpty ? nil : Term(words: parts, prefix: term.prefix, source: term.source)
            })
        var spelled: [String: Term] = [:]
        var spelledPrefixes: [String: Term] = [:]
        for term in terms where !(term.prefix && term.words.count > 1) {
            let key = Self.spelling(term.words.joined())
            if term.prefix { spelledPrefixes[key] = term } else { spelled[key] = term }
        }
        usernameSpellings = spelled
        usernameSpellingPrefixes = spelledPrefixes
        longestSpellingPrefix = spelledPrefixes.keys.map(\.count).max() ?? 0
        count = terms.count
    }

    /// The list in the file `path`.
    /// - Throws: `ConfigurationError` naming `variable` when the file cannot be read, is not
    ///   UTF-8, or holds a term that cannot be used (its line named).
    public init(contentsOfFile path: String, variable: String = WordList.variable) throws(ConfigurationError) {
        func refuse(_ why: String) -> ConfigurationError {
            ConfigurationError(
                variable: variable, value: path,
                expected: "a readable UTF-8 file of terms, one a line (\(why))")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw refuse("cannot read it: \(error.localizedDescription)")
        }
        guard var content = String(data: data, encoding: .utf8) else { throw refuse("it is not UTF-8 text") }
        if content.hasPrefix("\u{FEFF}") { content.removeFirst() }
        do {
            // `\r\n` is one Character: split on newline Characters, not on "\n".
            try self.init(lines: content.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline))
        } catch {
            throw refuse("\(error)")
        }
    }

    /// The list `MODERATION_WORDS_FILE` names, or `empty` when it is unset or empty.
    /// - Throws: `ConfigurationError` naming the variable (see `init(contentsOfFile:)`).
    public init(env: Environment) throws(ConfigurationError) {
        guard let path = env.optionalString(Self.variable) else {
            self = .empty
            return
        }
        try self.init(contentsOfFile: path)
    }

    // MARK: Matching

    /// The listed term (as the file wrote it) that `value` contains as whole words, or nil.
    public func firstMatch(in value: String) -> String? {
        if isEmpty { return nil }
        return text.firstMatch(in: Self.words(in: Self.fold(value)))?.source
    }

    /// The listed term (as the file wrote it) that the username `value` contains (see "Usernames"
    /// above), or nil.
    public func firstMatch(inUsername value: String) -> String? {
        if isEmpty { return nil }
        let parts = Self.words(in: Self.fold(value)).flatMap(Self.usernameParts)
        if let term = username.firstMatch(in: parts) { return term.source }
        // The name read without separators, and without its digits: a term without digits is
        // spelled by the letters, one with digits by the whole name.
        let joined = parts.joined()
        for spelled in [Self.letters(joined), joined] {
            if let term = usernameSpellings[spelled] { return term.source }
            if longestSpellingPrefix > 0,
                let term = Index.prefixMatch(spelled, in: usernameSpellingPrefixes, longest: longestSpellingPrefix)
            {
                return term.source
            }
        }
        return nil
    }

    /// `objectionable_content` on `field` when `value` contains a listed term, else nil (also
    /// for nil). The message does not repeat the term.
    public func check(_ value: String?, field: String) -> FieldError? {
        guard let value, firstMatch(in: value) != nil else { return nil }
        return Self.objectionable(field)
    }

    /// `objectionable_content` on `field` when the username `value` contains a listed term, else
    /// nil (also for nil).
    public func checkUsername(_ value: String?, field: String = "username") -> FieldError? {
        guard let value, firstMatch(inUsername: value) != nil else { return nil }
        return Self.objectionable(field)
    }

    /// The field error for a refused `field`.
    public static func objectionable(_ field: String) -> FieldError {
        FieldError(field: field, .objectionableContent, message: "contains a term that is not allowed")
    }

    // MARK: Folding and words

    /// `value` folded for comparison (see "Folding" above): NFKC, full case folding, NFKC, then
    /// without Default_Ignorable_Code_Point characters.
    public static func fold(_ value: String) -> String {
        let folded = value.precomposedStringWithCompatibilityMapping
            .folding(options: .caseInsensitive, locale: nil)
            .precomposedStringWithCompatibilityMapping
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: folded.unicodeScalars.lazy.filter { !$0.properties.isDefaultIgnorableCodePoint })
        return String(scalars)
    }

    /// The words of an already folded text (see "Words" above), in order.
    public static func words(in folded: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        /// Whether the last word ended with a character that is a word of its own: a combining
        /// mark after it still belongs to it.
        var lastStandsAlone = false
        func flush() {
            if !current.isEmpty { words.append(String(current)) }
            current = String.UnicodeScalarView()
        }
        for scalar in folded.unicodeScalars {
            switch kind(of: scalar) {
            case .separator:
                flush()
                lastStandsAlone = false
            case .mark where current.isEmpty && lastStandsAlone:
                words[words.count - 1].unicodeScalars.append(scalar)
            case .standsAlone:
                flush()
                words.append(String(scalar))
                lastStandsAlone = true
            case .letter, .digit, .mark:
                current.append(scalar)
                lastStandsAlone = false
            }
        }
        flush()
        return words
    }

    enum ScalarKind { case letter, digit, mark, standsAlone, separator }

    /// What `scalar` is to `words(in:)`: a letter (L), a digit or other number (N), a combining
    /// mark (M), an ideograph or Hiragana (a word of its own), or a separator (anything else).
    static func kind(of scalar: Unicode.Scalar) -> ScalarKind {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
            return properties.isIdeographic || (0x3040...0x309F).contains(scalar.value) ? .standsAlone : .letter
        case .decimalNumber, .letterNumber, .otherNumber:
            return properties.isIdeographic ? .standsAlone : .digit
        case .nonspacingMark, .spacingMark, .enclosingMark:
            return .mark
        default:
            return .separator
        }
    }

    /// A word cut where letters meet digits (`badword99` → `badword`, `99`), for usernames.
    static func usernameParts(_ word: String) -> [String] {
        var parts: [String] = []
        var current = String.UnicodeScalarView()
        var digits: Bool?
        for scalar in word.unicodeScalars {
            let kind = kind(of: scalar)
            let isDigit = kind == .digit
            if kind != .mark, let digits, digits != isDigit, !current.isEmpty {
                parts.append(String(current))
                current = String.UnicodeScalarView()
            }
            if kind != .mark { digits = isDigit }
            current.append(scalar)
        }
        if !current.isEmpty { parts.append(String(current)) }
        return parts
    }

    /// What a username must spell to match a term whose words, joined, are `joined`: its
    /// letters when it has no digit, else all of it (`2g1c` is not spelled by `g.c`).
    static func spelling(_ joined: String) -> String {
        joined.unicodeScalars.contains { kind(of: $0) == .digit } ? joined : letters(joined)
    }

    /// `value` without its digits.
    static func letters(_ value: String) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: value.unicodeScalars.lazy.filter { kind(of: $0) != .digit })
        return String(scalars)
    }

    /// Compiles one line of the file.
    static func compile(_ line: String, line number: Int) throws(InvalidTerm) -> Term {
        var body = line
        let prefix = body.hasSuffix("*")
        if prefix { body.removeLast() }
        let folded = fold(body)
        if let bad = folded.unicodeScalars.first(where: { kind(of: $0) == .separator && !$0.properties.isWhitespace }) {
            let code = String(bad.value, radix: 16, uppercase: true)
            throw InvalidTerm(
                line: number, term: line,
                reason:
                    "\(bad.escaped(asASCII: true)) (U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code)) "
                    + "is not a letter, mark, digit or space, so no word can match it "
                    + "(write the words of a phrase apart, e.g. `f u` for `f.u`)")
        }
        let words = words(in: folded)
        guard !words.isEmpty else {
            throw InvalidTerm(line: number, term: line, reason: "it holds no word")
        }
        if prefix, let last = folded.unicodeScalars.last, last.properties.isWhitespace {
            throw InvalidTerm(line: number, term: line, reason: "a `*` must follow a word")
        }
        return Term(words: words, prefix: prefix, source: line)
    }
}

extension ServiceError {
    /// 422 `objectionable_content` naming every refused field (`fields`, each with code
    /// `objectionable_content`): a text containing a term of the operator's word list
    /// (`WordList`; API.md "Privacy and safety"). Answered only for a request whose fields are
    /// otherwise valid: format errors (400) come first.
    public static func objectionableContent(_ fields: [FieldError]) -> ServiceError {
        let message = fields.map { "\($0.field): \($0.message)" }.joined(separator: "; ")
        return ServiceError(.objectionableContent, message: message, status: 422, fields: fields)
    }
}
