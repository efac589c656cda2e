import Wire

/// A request body parsed as a JSON object, with typed accessors that name the offending member
/// in every error: the gateway's syntax check (shape, types, ranges of the envelope); what a
/// value means is checked by the service that owns it.
struct JSONBody: Sendable {
    let object: JSONObject

    /// Parses the body; an empty body is `{}`.
    /// - Parameter requireContentType: a body must say it is JSON (`application/json`, or
    ///   `application/*+json`, parameters such as `charset` aside); false lets a body without
    ///   `Content-Type` through (a route that takes no body, checked only for members).
    /// - Throws: `Problem` 415 `unsupported_media_type` for a body whose `Content-Type` is missing
    ///   (when required) or not JSON, 400 `malformed_json` for bytes that are not one JSON object
    ///   (a repeated member named in `errors`).
    init(_ request: HTTPRequest, requireContentType: Bool = true) throws {
        if request.body.isEmpty {
            object = JSONObject(members: [])
            return
        }
        if requireContentType && request.header("content-type") == nil {
            throw Problem.unsupportedMediaType("the body must be application/json, and no Content-Type says so")
        }
        if let type = request.header("content-type") {
            let parts = type.split(separator: ";", omittingEmptySubsequences: false)
            let sent = parts.first.map { $0.trimmingOptionalWhitespace() } ?? ""
            let media = sent.lowercased()
            guard media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json")) else {
                throw Problem.unsupportedMediaType(
                    "the body must be application/json, not \(media.isEmpty ? "an empty type" : "`\(sent.visibleForMessage())`")"
                )
            }
            // RFC 8259 §8.1: JSON between systems is UTF-8. A `charset` parameter naming anything
            // else is refused rather than read as UTF-8 (RFC 9110 §8.3.1: case-insensitive,
            // possibly a quoted string).
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard pair.count == 2, pair[0].trimmingOptionalWhitespace().lowercased() == "charset" else { continue }
                var charset = pair[1].trimmingOptionalWhitespace()
                if charset.count >= 2, charset.hasPrefix("\""), charset.hasSuffix("\"") {
                    charset = String(charset.dropFirst().dropLast())
                }
                guard charset.lowercased() == "utf-8" else {
                    throw Problem.unsupportedMediaType(
                        "a JSON body must be UTF-8 (RFC 8259 §8.1), not "
                            + (charset.isEmpty ? "an empty charset" : "charset `\(charset.visibleForMessage())`"))
                }
            }
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(request.body)
        } catch let e as JSONParseError {
            if let name = e.duplicateName {
                throw Problem.malformedJSON(
                    "the member `\(name.visibleForMessage())` appears more than once", field: name.cutForField())
            }
            throw Problem.malformedJSON("the body is not valid JSON: \(e.message) at byte \(e.offset)")
        }
        guard case .object(let object) = value else { throw Problem.malformedJSON("the body must be a JSON object") }
        self.object = object
    }

    /// Refuses any member not in `allowed` (400 `unknown_field`, naming the first).
    func allowOnly(_ allowed: Set<String>) throws {
        if let unknown = object.members.first(where: { !allowed.contains($0.name) }) {
            throw Problem.unknownField(unknown.name)
        }
    }

    func has(_ key: String) -> Bool { object[key] != nil }

    /// Whether the member is present with JSON `null`.
    func isNull(_ key: String) -> Bool { object[key] == .null }

    private func wrongType(_ key: String, _ expected: String) -> Problem {
        Problem.invalidField(key, "must be \(expected)")
    }

    /// A required string. - Throws: 400 naming `key`.
    func string(_ key: String) throws -> String {
        guard let value = object[key] else { throw Problem.invalidField(key, "is required", code: "required") }
        guard case .string(let s) = value else { throw wrongType(key, "a string") }
        return s
    }

    /// An optional string (absent or null → nil). - Throws: 400 naming `key`.
    func optionalString(_ key: String) throws -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw wrongType(key, "a string")
        }
    }

    /// An optional boolean (absent or null → nil). - Throws: 400 naming `key`.
    func optionalBool(_ key: String) throws -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        default: throw wrongType(key, "true or false")
        }
    }

    /// A required boolean. - Throws: 400 naming `key`.
    func bool(_ key: String) throws -> Bool {
        guard object[key] != nil, object[key] != .null else {
            throw Problem.invalidField(key, "is required", code: "required")
        }
        return try optionalBool(key)!
    }

    /// A required integer in `range`: the same answer for a fraction, an exponent or a number
    /// of any size outside the range. - Throws: 400 `invalid_field` naming `key`.
    func int(_ key: String, in range: ClosedRange<Int64>) throws -> Int64 {
        guard let value = object[key], value != .null else { throw Problem.invalidField(key, "is required", code: "required") }
        let message = "must be an integer from \(range.lowerBound) to \(range.upperBound)"
        guard case .number(let text) = value, let n = Int64(text), range.contains(n) else {
            throw Problem.invalidField(key, message)
        }
        return n
    }

    /// An optional array of strings (absent or null → nil). - Throws: 400 naming `key`.
    func optionalStrings(_ key: String) throws -> [String]? {
        switch object[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            return try items.map {
                guard case .string(let s) = $0 else { throw wrongType(key, "an array of strings") }
                return s
            }
        default: throw wrongType(key, "an array of strings")
        }
    }
}
