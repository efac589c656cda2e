import Foundation
import Testing
import Wire

@testable import Gateway

/// The strict request-body parser and the response writer.
@Suite struct JSONTests {
    func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test func parsesRFC8259Values() throws {
        let v = try parse(#" {"a": [1, -2.5e3, true, false, null, "x\u00e9\ud83d\ude00\n"], "b": {}} "#)
        guard case .object(let o) = v, case .array(let items)? = o["a"] else {
            Issue.record("not an object with an array")
            return
        }
        #expect(items == [.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null, .string("xé😀\n")])
        #expect(o["b"] == .object(JSONObject(members: [])))
    }

    @Test func refusesWhatRFC8259Refuses() {
        for bad in [
            "", "{", "{\"a\":1,}", "[1,]", "01", "1.", ".5", "-", "+1", "'a'", "{a:1}", "\"\t\"", "\"\\x\"", "nul",
            "[1] [2]", "\"\\ud800\"", "\"\\udc00x\"", "{\"a\" 1}", "1e", "[\"\u{1}\"]",
        ] {
            #expect(throws: JSONParseError.self, "\(bad)") { _ = try parse(bad) }
        }
    }

    @Test func aRepeatedMemberNameIsNamed() {
        do {
            _ = try parse(#"{"upToSeq": 1, "x": {"upToSeq": 2}, "upToSeq": 3}"#)
            Issue.record("accepted a duplicate")
        } catch let e as JSONParseError {
            #expect(e.duplicateName == "upToSeq")
        } catch {
            Issue.record("\(error)")
        }
    }

    /// Small objects are checked for repeats one name at a time, larger ones in a set: a repeat is
    /// refused on both sides of that limit, and distinct names are not taken for repeats.
    @Test func aRepeatedNameIsFoundInObjectsOfEverySize() throws {
        let limit = JSONParser.linearNameLimit
        for size in [2, limit - 1, limit, limit + 1, 40] {
            let names = (0..<size).map { "m\($0)" }
            let distinct = "{" + names.map { "\"\($0)\": 1" }.joined(separator: ",") + "}"
            guard case .object(let o) = try parse(distinct) else {
                Issue.record("not an object")
                continue
            }
            #expect(o.members.map { $0.name } == names)
            for repeated in [0, size / 2, size - 1] {
                let text = "{" + (names + [names[repeated]]).map { "\"\($0)\": 1" }.joined(separator: ",") + "}"
                #expect(throws: JSONParseError.self, "\(size) members, \(names[repeated]) twice") { _ = try parse(text) }
            }
        }
    }

    /// Strings without an escape are made from the body's bytes directly, those with one through a
    /// buffer: both keep non-ASCII text and both refuse bytes that are not UTF-8.
    @Test func stringsWithAndWithoutEscapesKeepTheirText() throws {
        #expect(try parse(#""앨리스 Alice""#) == .string("앨리스 Alice"))
        #expect(try parse(#""앨리스\n Alice""#) == .string("앨리스\n Alice"))
        #expect(try parse(#""plain""#) == .string("plain"))
        #expect(try parse(#""""#) == .string(""))
        #expect(throws: JSONParseError.self) { _ = try JSONParser.parse([0x22, 0x41, 0xc3, 0x22]) }
        #expect(throws: JSONParseError.self) { _ = try JSONParser.parse([0x22, 0x5c, 0x6e, 0xc3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { _ = try JSONParser.parse([0x22, 0x41, 0x0a, 0x22]) }
        #expect(throws: JSONParseError.self) { _ = try JSONParser.parse([0x22, 0x41, 0x42]) }
    }

    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONParseError.self) { _ = try parse(deep) }
        #expect(throws: Never.self) { _ = try parse(String(repeating: "[", count: 60) + String(repeating: "]", count: 60)) }
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: JSONParseError.self) { _ = try JSONParser.parse([0x22, 0xff, 0xfe, 0x22]) }
    }

    /// The error names the first bad byte's offset, with and without an escape in the string.
    @Test func invalidUTF8IsReportedAtTheBadByte() {
        let prefix = Array(#"{"bio":"a"#.utf8)  // the byte after it is offset 9
        let cases: [(tail: [UInt8], offset: Int)] = [
            ([0xc3, 0x28, 0x62, 0x22, 0x7d], 9),  // a lead byte followed by ASCII
            ([0x5c, 0x6e, 0xc3, 0x28, 0x22, 0x7d], 11),  // the same after an escape
            ([0xc3, 0xa9, 0xff, 0x22, 0x7d], 11),  // after a valid two-byte sequence
            ([0xe2, 0x82, 0x22, 0x7d], 9),  // truncated by the closing quote
        ]
        for c in cases {
            do {
                _ = try JSONParser.parse(prefix + c.tail)
                Issue.record("accepted \(c.tail)")
            } catch let e as JSONParseError {
                #expect(e.message == "a string is not valid UTF-8" && e.offset == c.offset, "\(c.tail): \(e)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    /// Integers out of range, fractions and exponents get one answer whatever the number's size.
    @Test func numbersOutOfRangeGetTheSameAnswerWhateverTheirSize() throws {
        let request = { (body: String) in
            HTTPRequest(
                method: .post, path: "/", rawQuery: nil,
                headers: HTTPHeaders(fields: [("content-type", "application/json")]), body: Array(body.utf8),
                peerAddress: "127.0.0.1")
        }
        var messages = Set<String>()
        for n in ["-1", "9007199254740992", "99999999999999999999999999", "1e400", "1.5", "1e2", "-0.0"] {
            let body = try JSONBody(request(#"{"upToSeq": \#(n)}"#))
            do {
                _ = try body.decode(NotificationsController.MarkReadBody.self)
                Issue.record("accepted \(n)")
            } catch let p as Problem {
                #expect(p.status == 400 && p.code == .invalidField && p.errors?.first?.field == "upToSeq")
                messages.insert(p.detail)
            }
        }
        #expect(messages.count == 1)
        let largest = try JSONBody(request(#"{"upToSeq": 9007199254740991}"#)).decode(NotificationsController.MarkReadBody.self)
        guard case .upTo(9_007_199_254_740_991) = largest else {
            Issue.record("\(largest)")
            return
        }
    }

    struct Shape: Encodable {
        var name: String
        var photo: String?
        var tags: [String]
        var nested: Inner?
        var count: Int
        var ratio: Double
        struct Inner: Encodable {
            var ok: Bool
            var none: Int?
        }
    }

    @Test func theWriterWritesEveryMemberNullsIncludedSorted() throws {
        let bytes = try JSONWriter.encode(
            Shape(
                name: "a\"b\\c\n\u{1}/é", photo: nil, tags: ["x", ""], nested: .init(ok: true, none: nil), count: -3, ratio: 0.5))
        #expect(
            String(decoding: bytes, as: UTF8.self)
                == #"{"count":-3,"name":"a\"b\\c\n\u0001/é","nested":{"none":null,"ok":true},"photo":null,"ratio":0.5,"tags":["x",""]}"#
        )
        let empty = try JSONWriter.encode(Shape(name: "", photo: "p", tags: [], nested: nil, count: 0, ratio: 2))
        #expect(
            String(decoding: empty, as: UTF8.self)
                == #"{"count":0,"name":"","nested":null,"photo":"p","ratio":2,"tags":[]}"#)
        // What the writer writes, the parser reads back.
        #expect(throws: Never.self) { _ = try JSONParser.parse(bytes) }
    }

    @Test func theWriterRefusesNonFiniteNumbers() {
        #expect(throws: EncodingError.self) {
            _ = try JSONWriter.encode(Shape(name: "", photo: nil, tags: [], nested: nil, count: 0, ratio: .infinity))
        }
    }
}

/// `trimmingOptionalWhitespace`: RFC 9110's OWS (space, tab) only, text with multi-byte
/// characters at either end kept whole.
@Suite struct OptionalWhitespaceTests {
    @Test func spacesAndTabsAreTrimmedAndNothingElse() {
        #expect(" \t token \t ".trimmingOptionalWhitespace() == "token")
        #expect("앨리스".trimmingOptionalWhitespace() == "앨리스")
        #expect("  앨 리스😀\t".trimmingOptionalWhitespace() == "앨 리스😀")
        #expect(" \t ".trimmingOptionalWhitespace() == "")
        #expect("".trimmingOptionalWhitespace() == "")
        #expect("\u{A0}x\u{A0}".trimmingOptionalWhitespace() == "\u{A0}x\u{A0}")
        #expect("a, b ,c".split(separator: ",").map { $0.trimmingOptionalWhitespace() } == ["a", "b", "c"])
    }
}

/// What a client sent, quoted in an error message: invisible and non-ASCII characters escaped,
/// long values cut, and the 415 and duplicate-member answers using it.
@Suite struct VisibleForMessageTests {
    @Test func invisibleCharactersAreEscapedAndLongValuesCut() {
        #expect("application/xml".visibleForMessage() == "application/xml")
        #expect("application/json\u{A0}".visibleForMessage() == "application/json\\u{00A0}")
        #expect("a\tb".visibleForMessage() == "a\\tb")
        #expect("앨리스 é 😀".visibleForMessage() == "앨리스 é 😀")
        #expect("a\\b`c".visibleForMessage() == "a\\\\b\\u{60}c")
        #expect("e\u{301}\u{200B}\u{2028}\u{E000}".visibleForMessage() == "e\\u{0301}\\u{200B}\\u{2028}\\u{E000}")
        #expect(String(repeating: "x", count: 100).visibleForMessage(limit: 4) == "xxxx…")
    }

    @Test func anUnknownFieldIsQuotedVisiblyAndCut() {
        let odd = Problem.unknownField("a`b\u{A0}")
        #expect(odd.detail == "unknown field `a\\u{60}b\\u{00A0}`" && odd.errors?.first?.field == "a`b\u{A0}")
        let long = Problem.unknownField(String(repeating: "z", count: 300_000))
        #expect(long.detail.count < 100 && long.errors?.first?.field == String(repeating: "z", count: 64) + "…")
    }

    @Test func theAnswersQuoteTheValueVisibly() {
        func request(_ contentType: String, _ body: String) -> HTTPRequest {
            HTTPRequest(
                method: .post, path: "/", rawQuery: nil, headers: HTTPHeaders(fields: [("content-type", contentType)]),
                body: Array(body.utf8), peerAddress: "127.0.0.1")
        }
        do {
            _ = try JSONBody(request("Application/JSON\u{A0}; charset=utf-8", "{}"))
            Issue.record("accepted a content type with a no-break space")
        } catch let p as Problem {
            #expect(p.status == 415 && p.detail == "the body must be application/json, not `Application/JSON\\u{00A0}`")
        } catch {
            Issue.record("\(error)")
        }
        for accepted in ["application/json; charset=utf-8", "application/json;CHARSET=\"UTF-8\"", "application/json; v=1"] {
            #expect(throws: Never.self, "\(accepted)") { _ = try JSONBody(request(accepted, "{}")) }
        }
        let empty = #expect(throws: Problem.self) { _ = try JSONBody(request("application/json; charset=", "{}")) }
        #expect(empty?.detail == "a JSON body must be UTF-8 (RFC 8259 §8.1), not an empty charset")
        for refused in ["application/json; charset=utf-16", "application/json;charset=\"latin1\"", "application/json; charset="] {
            do {
                _ = try JSONBody(request(refused, "{}"))
                Issue.record("accepted \(refused)")
            } catch let p as Problem {
                #expect(p.status == 415 && p.detail.hasPrefix("a JSON body must be UTF-8"), "\(refused): \(p.detail)")
            } catch {
                Issue.record("\(error)")
            }
        }
        let long = String(repeating: "n", count: 1_000)
        do {
            _ = try JSONBody(request("application/json", "{\"\(long)\": 1, \"\(long)\": 2}"))
            Issue.record("accepted a repeated member")
        } catch let p as Problem {
            #expect(p.status == 400 && p.errors?.first?.field == String(repeating: "n", count: 64) + "…")
            #expect(p.detail == "the member `\(String(repeating: "n", count: 64))…` appears more than once")
        } catch {
            Issue.record("\(error)")
        }
    }
}
