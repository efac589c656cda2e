import Testing
import Wire

@testable import Gateway

/// The strict request-body decoder alone: unknown members refused before any member is read,
/// and each answer naming its member in the API's words.
@Suite struct RequestBodyDecoderTests {
    struct Shape: Decodable {
        var name: String
        var on: Bool
        var note: String?
        var tags: [String]?
        var count: Int?
        var inner: Inner?
        struct Inner: Decodable {
            var flag: Bool
        }
    }

    func problem(_ body: String, as type: (some Decodable).Type = Shape.self) throws -> Problem? {
        guard case .object(let object) = try JSONParser.parse(Array(body.utf8)) else { return nil }
        do {
            _ = try RequestBodyDecoder.decode(type, from: object)
            return nil
        } catch let problem as Problem {
            return problem
        }
    }

    @Test func anUnknownMemberIsRefusedBeforeAnyMemberIsRead() throws {
        let p = try problem(#"{"name": 5, "isAdmin": true, "other": 1}"#)
        #expect(p?.code == .unknownField && p?.detail == "unknown field `isAdmin`")
        #expect(p?.errors == [FieldError(field: "isAdmin", code: "unknown_field", message: "is not a field of this request")])
        let nested = try problem(#"{"name": "a", "on": true, "inner": {"flag": true, "x": 1}}"#)
        #expect(nested?.detail == "unknown field `inner.x`" && nested?.errors?.first?.field == "inner.x")
    }

    @Test func eachAnswerNamesTheMemberInTheAPIsWords() throws {
        let cases: [(String, String, String)] = [
            (#"{"on": true}"#, "name", "name: is required"),
            (#"{"name": null, "on": true}"#, "name", "name: must be a string"),
            (#"{"name": "a"}"#, "on", "on: is required"),
            (#"{"name": "a", "on": null}"#, "on", "on: is required"),
            (#"{"name": "a", "on": "yes"}"#, "on", "on: must be true or false"),
            (#"{"name": "a", "on": true, "note": 1}"#, "note", "note: must be a string"),
            (#"{"name": "a", "on": true, "tags": ["x", 1]}"#, "tags", "tags: must be an array of strings"),
            (#"{"name": "a", "on": true, "tags": "x"}"#, "tags", "tags: must be an array of strings"),
            (#"{"name": "a", "on": true, "count": 1.5}"#, "count", "count: must be an integer from \(Int.min) to \(Int.max)"),
            (#"{"name": "a", "on": true, "inner": 1}"#, "inner", "inner: must be an object"),
            (#"{"name": "a", "on": true, "inner": {"flag": 1}}"#, "inner.flag", "inner.flag: must be true or false"),
        ]
        for (body, field, detail) in cases {
            let p = try problem(body)
            #expect(p?.status == 400 && p?.code == .invalidField, "\(body)")
            #expect(p?.detail == detail && p?.errors?.first?.field == field, "\(body): \(p?.detail ?? "accepted")")
        }
        #expect(try problem(#"{"on": true}"#)?.errors?.first?.code == "required")
    }

    @Test func absentAndNullOptionalsAreNil() throws {
        guard case .object(let object) = try JSONParser.parse(Array(#"{"name": "a", "on": false, "note": null}"#.utf8)) else {
            Issue.record("not an object")
            return
        }
        let shape = try RequestBodyDecoder.decode(Shape.self, from: object)
        #expect(shape.name == "a" && !shape.on && shape.note == nil && shape.tags == nil && shape.inner == nil)
    }

    @Test func aRouteWithoutABodyRefusesEveryMemberButTakesAnEmptyObject() throws {
        #expect(try problem("{}", as: NoBody.self) == nil)
        #expect(try problem(#"{"a": 1}"#, as: NoBody.self)?.detail == "unknown field `a`")
    }
}
