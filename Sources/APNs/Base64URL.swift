import Foundation

/// base64url without padding (RFC 4648 §5; JWS, RFC 7515 §2).
enum Base64URL {
    /// Encodes `bytes`.
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return String(
            text.map { c -> Character in
                switch c {
                case "+": "-"
                case "/": "_"
                default: c
                }
            })
    }

    /// Decodes `text`; nil when it is not base64url.
    static func decode(_ text: String) -> [UInt8]? {
        var standard = String(
            text.map { c -> Character in
                switch c {
                case "-": "+"
                case "_": "/"
                default: c
                }
            })
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
