import Wire

/// A request body parsed as a JSON object (its `Content-Type` checked), decoded into the route's
/// `Decodable` body type by the strict decoder: the gateway's syntax check (shape, types, ranges
/// of the envelope); what a value means is checked by the service that owns it.
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

    /// The body decoded as `T`, strictly (`RequestBodyDecoder`): a member `T` does not name is
    /// refused, and every error names its member.
    /// - Throws: `Problem` 400 `unknown_field` or `invalid_field`, or what `T` throws.
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try RequestBodyDecoder.decode(type, from: object) }
}
