import Foundation
import Shared

/// Serialises API replies built as `[String: Any]` trees (absent optionals as explicit `null`).
enum JSONOut {
    /// UTF-8 JSON with unescaped slashes. Keys are not sorted: sorting took a third of the
    /// gateway's CPU when load-test clients polled notification lists (measured with perf).
    static func bytes(_ object: Any) -> [UInt8] {
        guard
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes])
        else { return Array("{}".utf8) }
        return Array(data)
    }

    /// A value or `NSNull()`.
    static func orNull(_ value: Any?) -> Any { value ?? NSNull() }

    /// An Encodable value as a JSON tree (via the wire coder).
    static func tree<T: Encodable>(_ value: T) -> Any {
        guard let bytes = try? WireJSON.encode(value),
            let object = try? JSONSerialization.jsonObject(
                with: Data(bytes), options: [.fragmentsAllowed])
        else { return NSNull() }
        return object
    }
}
