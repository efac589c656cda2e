import Foundation
import Harness
import Messages
import Support
import Testing
import Wire

/// `WordList`, the one matcher of the operator's word list (API.md "Privacy and safety"): NFKC
/// case folding, whole words, phrases, prefix terms, usernames, Korean, Chinese and Japanese text,
/// and the file's format (comments, blank lines, unusable terms, an unreadable file).
@Suite struct WordListTests {
    static func list(_ lines: String...) throws -> WordList { try WordList(lines: lines) }

    @Test func foldingIsNFKCCaseFoldingWithoutIgnorables() {
        #expect(WordList.fold("ＢＡＤＷＯＲＤ") == "badword")
        #expect(WordList.fold("BadWord") == "badword")
        // Full case folding, which lowercased() is not: ß and ẞ are ss, a final sigma is σ.
        #expect(WordList.fold("Straße") == WordList.fold("STRASSE"))
        #expect(WordList.fold("ẞ") == "ss")
        #expect(WordList.fold("ΟΔΟΣ") == WordList.fold("οδος"))
        // Compatibility mappings: ligatures, circled digits, half-width Katakana.
        #expect(WordList.fold("ﬁne") == "fine")
        #expect(WordList.fold("①") == "1")
        #expect(WordList.fold("ﾊﾞｶ") == "バカ")
        // Default ignorables are dropped: soft hyphen, zero-width space, ZWJ, variation selectors.
        #expect(WordList.fold("bad\u{AD}wo\u{200B}r\u{200D}d\u{FE0F}") == "badword")
        // Hangul: jamo (as macOS input sends them) compose into syllables; compatibility and
        // half-width jamo become ordinary jamo.
        #expect(WordList.fold("\u{1107}\u{1161}\u{1107}\u{1169}") == "바보")
        #expect(WordList.fold("ㅂㅅ") == WordList.fold("\u{FFB2}\u{FFB5}"))
    }

    @Test func wordsAreLettersMarksAndDigitsAndEachIdeographStandsAlone() {
        #expect(WordList.words(in: "the badword's end.") == ["the", "badword", "s", "end"])
        #expect(WordList.words(in: "a_b.c-d🙂e") == ["a", "b", "c", "d", "e"])
        #expect(WordList.words(in: "café") == ["café"])
        #expect(WordList.words(in: "cafe\u{301} x") == ["cafe\u{301}", "x"])
        #expect(WordList.words(in: "너 바보야, 진짜") == ["너", "바보야", "진짜"])
        #expect(WordList.words(in: "你是笨蛋吗") == ["你", "是", "笨", "蛋", "吗"])
        #expect(WordList.words(in: "ばかだね バカ") == ["ば", "か", "だ", "ね", "バカ"])
    }

    @Test func aTermMatchesWholeWordsCaseInsensitivelyAfterFolding() throws {
        let words = try Self.list("badword")
        for text in [
            "badword", "BadWord", "ＢＡＤＷＯＲＤ", "what a BADWORD!", "the badword's fault", "(badword)", "x_badword_y",
            "bad\u{AD}word", "🙂badword🙂", "line one\nbadword",
        ] {
            #expect(words.firstMatch(in: text) == "badword", "\(text)")
        }
        for text in ["badwordsmith", "unbadword", "badword2", "bad word", "bad-word", "b a d w o r d", "", "good words"] {
            #expect(words.firstMatch(in: text) == nil, "\(text)")
        }
        // The term is folded too: a list written in capitals or full width matches the same.
        #expect(try Self.list("ＢａｄＷｏｒｄ").firstMatch(in: "a badword") == "ＢａｄＷｏｒｄ")
        #expect(try Self.list("STRASSE").firstMatch(in: "die Straße") == "STRASSE")
    }

    @Test func aTermOfSeveralWordsMatchesAsAPhrase() throws {
        let words = try Self.list("bad word", "very  bad   thing")
        #expect(words.firstMatch(in: "such a bad word here") == "bad word")
        #expect(words.firstMatch(in: "bad, word") == "bad word")
        #expect(words.firstMatch(in: "BAD\nWORD") == "bad word")
        #expect(words.firstMatch(in: "a VERY bad thing") == "very  bad   thing")
        #expect(words.firstMatch(in: "bad words") == nil)
        #expect(words.firstMatch(in: "word bad") == nil)
        #expect(words.firstMatch(in: "bad") == nil)
        #expect(words.firstMatch(in: "very bad") == nil)
    }

    @Test func aTermEndingInAStarMatchesWordsBeginningWithIt() throws {
        let words = try Self.list("바보*", "bad wor*")
        for text in ["바보", "너 바보야", "바보를 봐", "바보!"] { #expect(words.firstMatch(in: text) == "바보*", "\(text)") }
        #expect(words.firstMatch(in: "바다") == nil)
        #expect(words.firstMatch(in: "so bad worse") == "bad wor*")
        #expect(words.firstMatch(in: "so bad wo") == nil)
        // A base letter is not a prefix of itself with an accent.
        #expect(try Self.list("cafe*").firstMatch(in: "café") == nil)
    }

    @Test func koreanMatchesWholeWordsSoAWordThatContainsATermIsLeftAlone() throws {
        let words = try Self.list("바보", "멍청한 사람")
        #expect(words.firstMatch(in: "너는 바보") == "바보")
        #expect(words.firstMatch(in: "바보, 진짜.") == "바보")
        // Typed as jamo (NFD, as macOS input may send it) or in full-width punctuation.
        #expect(words.firstMatch(in: "너는 \u{1107}\u{1161}\u{1107}\u{1169}") == "바보")
        #expect(words.firstMatch(in: "（바보）") == "바보")
        // A longer word is another word: 바보짓 (a foolish act), and a particle attached (바보야)
        // is the list's business: it lists the form or a prefix term (`바보*`).
        #expect(words.firstMatch(in: "그건 바보짓이야") == nil)
        #expect(words.firstMatch(in: "바보야") == nil)
        #expect(words.firstMatch(in: "정말 멍청한 사람이네") == nil)
        #expect(words.firstMatch(in: "정말 멍청한 사람 같아") == "멍청한 사람")
        // Compatibility jamo (ㅂㅅ) as typed, in half width too.
        let initials = try Self.list("ㅂㅅ")
        #expect(initials.firstMatch(in: "ㅂㅅ 같네") == "ㅂㅅ")
        #expect(initials.firstMatch(in: "\u{FFB2}\u{FFB5}") == "ㅂㅅ")
        #expect(initials.firstMatch(in: "ㅂㅅㅂ") == nil)
    }

    @Test func ideographsMatchAsPhrasesInsideTextWithoutSpaces() throws {
        let words = try Self.list("笨蛋", "ばか")
        #expect(words.firstMatch(in: "你是笨蛋吗") == "笨蛋")
        #expect(words.firstMatch(in: "你是笨人吗") == nil)
        #expect(words.firstMatch(in: "あなたはばかだ") == "ばか")
    }

    @Test func usernamesMatchByPartsAndByTheirLetters() throws {
        let words = try Self.list("badword", "bad guy", "2g1c", "foo*")
        for name in [
            "badword", "the_badword", "badword.official", "badword99", "99badword", "BadWord", "bad_word", "b.a.d.w.o.r.d",
            "bad_word99", "bad.guy", "the_bad_guy_1", "2g1c", "x.2g1c", "2g_1c_x", "2_g_1_c", "foobar", "foo_x", "f_o_o_d",
        ] {
            #expect(words.firstMatch(inUsername: name) != nil, "\(name)")
        }
        for name in ["badwordsmith", "thebadword", "b4dword", "bad_words", "badguy_x", "xfoo", "goodword", "2gx1c", "g.c", "gc"] {
            #expect(words.firstMatch(inUsername: name) == nil, "\(name)")
        }
        #expect(words.firstMatch(inUsername: "badword99") == "badword")
        #expect(words.firstMatch(inUsername: "bad.guy") == "bad guy")
        #expect(words.firstMatch(inUsername: "the_bad_guy_1") == "bad guy")
    }

    @Test func checksNameTheFieldWithObjectionableContent() throws {
        let words = try Self.list("badword")
        #expect(words.check("a BadWord", field: "caption") == WordList.objectionable("caption"))
        #expect(words.check("a BadWord", field: "caption")?.code == "objectionable_content")
        #expect(words.check("fine", field: "caption") == nil)
        #expect(words.check(nil, field: "caption") == nil)
        #expect(words.checkUsername("bad_word")?.field == "username")
        let error = ServiceError.objectionableContent([WordList.objectionable("name"), WordList.objectionable("bio")])
        #expect(error.status == 422 && error.code == "objectionable_content")
        #expect(error.fields?.map(\.field) == ["name", "bio"])
        // The message does not repeat the term.
        #expect(!(words.check("badword", field: "text")?.message.contains("badword") ?? true))
    }

    @Test func theFileSkipsBlankLinesAndCommentsAndRefusesTermsNoWordCanMatch() throws {
        let words = try WordList(
            lines: ["# the operator's list", "", "   ", "badword  ", "  # indented comment", "\tbad word\r"])
        #expect(words.count == 2)
        #expect(words.firstMatch(in: "so bad word") == "bad word")
        #expect(WordList.empty.isEmpty && WordList.empty.firstMatch(in: "badword") == nil)
        for (line, bad) in [("a$$", "a$$"), ("f.u", "f.u"), ("🙂", "🙂"), ("a**", "a**"), ("*", "*"), ("bad *", "bad *")] {
            #expect(throws: WordList.InvalidTerm.self, "\(bad)") { try WordList(lines: ["ok", line]) }
        }
        do throws(WordList.InvalidTerm) {
            _ = try WordList(lines: ["ok", "", "a$$"])
            Issue.record("a$$ was accepted")
        } catch {
            #expect(error.line == 3 && error.term == "a$$")
            #expect(error.description.contains("U+0024"))
        }
        // Only soft hyphens: no word at all.
        #expect(throws: WordList.InvalidTerm.self) { try WordList(lines: ["\u{AD}\u{AD}"]) }
    }

    @Test func theVariableUnsetFiltersNothingAndAnUnreadableFileIsAConfigurationError() throws {
        #expect(try WordList(env: Environment([:])).isEmpty)
        #expect(try WordList(env: Environment([WordList.variable: ""])).isEmpty)
        let directory = makeTemporaryDirectory("wordlist")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/words.txt"
        try Data("\u{FEFF}# list\r\nbadword\r\n바보*\r\n".utf8).write(to: URL(fileURLWithPath: path))
        let loaded = try WordList(env: Environment([WordList.variable: path]))
        #expect(loaded.count == 2 && loaded.firstMatch(in: "바보야") == "바보*")

        for (file, why) in [
            ("\(directory)/missing.txt", "cannot read it"), (directory, "cannot read it"), ("\(directory)/latin1.txt", "UTF-8"),
            ("\(directory)/bad.txt", "line 2"),
        ] {
            try Data([0x62, 0xE9, 0x0A]).write(to: URL(fileURLWithPath: "\(directory)/latin1.txt"))
            try Data("ok\nf.u\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/bad.txt"))
            do throws(ConfigurationError) {
                _ = try WordList(env: Environment([WordList.variable: file]))
                Issue.record("\(file) was accepted")
            } catch {
                #expect(error.variable == WordList.variable && error.value == file)
                #expect(error.description.contains("MODERATION_WORDS_FILE") && error.description.contains(why), "\(error)")
            }
        }
    }

    /// A long list and a long text: the matcher looks words up, it does not scan the list per
    /// word (a 2,200-character caption against 10,000 terms, 200 times, within a generous bound
    /// for a debug build on a loaded machine).
    @Test func aLongListIsLookedUpNotScanned() throws {
        let words = try WordList(lines: (0..<10_000).map { "term\($0)" } + ["바보*", "bad word"])
        let caption = String(repeating: "plain words and 한국어 문장 ", count: 80).prefix(2_200)
        let start = Date()
        for _ in 0..<200 { #expect(words.firstMatch(in: String(caption)) == nil) }
        #expect(Date().timeIntervalSince(start) < 30)
        #expect(words.firstMatch(in: String(caption) + " TERM9999") == "term9999")
    }
}
