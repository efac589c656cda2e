import Foundation
import Shared

/// A request body parsed as a JSON object, with typed accessors that reject wrong types and
/// unknown keys (`JSONSerialization` rather than `Codable`, which cannot reject unknown keys).
struct JSONBody {
    let object: [String: Any]

    /// Parses the request's body. An empty body is `{}`.
    /// - Throws: `Problem` 415 for a non-JSON `Content-Type`, 400 `malformed_json` for bytes
    ///   that are not a JSON object.
    init(_ request: HTTPRequest) throws {
        if request.body.isEmpty {
            object = [:]
            return
        }
        if let type = request.header("content-type") {
            let media =
                type.split(separator: ";").first.map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                } ?? ""
            guard
                media == "application/json" || (media.hasPrefix("application/") && media.hasSuffix("+json"))
            else {
                throw Problem.unsupportedMediaType(media.isEmpty ? "an empty media type" : media)
            }
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(request.body), options: [])
        } catch {
            throw Problem.malformedJSON("the body is not valid JSON")
        }
        guard let object = parsed as? [String: Any] else {
            throw Problem.malformedJSON("the body must be a JSON object")
        }
        self.object = object
    }

    /// Rejects any key not in `allowed` (400 `unknown_field`, naming the first in sorted order).
    func allowOnly(_ allowed: Set<String>) throws {
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw Problem.unknownField(unknown)
        }
    }

    func has(_ key: String) -> Bool { object[key] != nil }

    /// Whether the key is present with JSON `null`.
    func isNull(_ key: String) -> Bool { object[key] is NSNull }

    /// A required string.
    func string(_ key: String) throws -> String {
        guard let value = object[key] else {
            throw Problem.invalidField(key, "is required", code: "required")
        }
        guard let s = value as? String else { throw Problem.invalidField(key, "must be a string") }
        return s
    }

    /// An optional string (absent or null → nil).
    func optionalString(_ key: String) throws -> String? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let s = value as? String else { throw Problem.invalidField(key, "must be a string") }
        return s
    }

    /// An optional boolean (absent or null → nil); numbers are not booleans.
    func optionalBool(_ key: String) throws -> Bool? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard Self.isBool(value), let b = value as? Bool else {
            throw Problem.invalidField(key, "must be true or false")
        }
        return b
    }

    /// A required boolean.
    func bool(_ key: String) throws -> Bool {
        guard object[key] != nil else {
            throw Problem.invalidField(key, "is required", code: "required")
        }
        guard let b = try optionalBool(key) else {
            throw Problem.invalidField(key, "must be true or false")
        }
        return b
    }

    /// A required integer in `range` (booleans and fractions refused).
    func int(_ key: String, in range: ClosedRange<Int64>) throws -> Int64 {
        guard let value = object[key] else {
            throw Problem.invalidField(key, "is required", code: "required")
        }
        guard let n = value as? NSNumber, !Self.isBool(value),
            !["d", "f"].contains(String(cString: n.objCType))
        else {
            throw Problem.invalidField(key, "must be an integer")
        }
        let v = n.int64Value
        guard range.contains(v) else {
            throw Problem.invalidField(key, "must be in \(range.lowerBound)...\(range.upperBound)")
        }
        return v
    }

    /// An optional array of strings.
    func optionalStrings(_ key: String) throws -> [String]? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        guard let array = value as? [Any] else {
            throw Problem.invalidField(key, "must be an array of strings")
        }
        var out: [String] = []
        for item in array {
            guard let s = item as? String else {
                throw Problem.invalidField(key, "must be an array of strings")
            }
            out.append(s)
        }
        return out
    }

    /// Whether a parsed JSON value is a boolean (Foundation boxes JSON `true`/`false` as
    /// `NSNumber` with type `c`).
    static func isBool(_ value: Any) -> Bool {
        guard let n = value as? NSNumber else { return false }
        return String(cString: n.objCType) == "c"
    }
}

/// Field rules the gateway checks before calling a service.
enum FieldRules {
    static let genders: Set<String> = ["female", "male", "custom", "prefer_not_to_say"]

    /// `YYYY-MM-DD`, a real calendar date between 1900-01-01 and today.
    static func isBirthDate(_ s: String) -> Bool {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard s.count == 10, parts.count == 3, parts[0].count == 4, parts[1].count == 2,
            parts[2].count == 2,
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
            (1900...9999).contains(y), (1...12).contains(m)
        else { return false }
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
        guard (1...days).contains(d) else { return false }
        return s <= String(Timestamp.now().prefix(10))
    }
}
