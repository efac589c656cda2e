import Wire

/// Absolute http(s) URLs, parsed by the generic syntax of RFC 3986 (§3) rather than matched
/// against a pattern. Each violation is a field error with code `invalid_url` whose message
/// says what is wrong.
public enum URLRules {
    /// Longest URL accepted, in characters (the de-facto limit browsers and CDNs share).
    public static let maxLength = 2_048

    /// Checks that `value` is an absolute `http` or `https` URL: a host, an optional port in
    /// 1...65535, no spaces or control characters, only characters RFC 3986 allows (non-ASCII
    /// must be percent-encoded), valid percent-escapes, at most `maxLength` characters.
    /// - Returns: the `invalid_url` error for `field`, or nil.
    public static func httpURL(_ value: String, field: String) -> FieldError? {
        func error(_ message: String) -> FieldError { FieldError(field: field, .invalidURL, message: message) }
        if value.isEmpty { return error("must be an absolute http or https URL") }
        if value.count > maxLength { return error("is too long: at most \(maxLength) characters") }
        let bytes = Array(value.utf8)
        if bytes.contains(where: { $0 < 0x20 || $0 == 0x7f }) || value.unicodeScalars.contains(where: TextRules.isControl) {
            return error("must not contain control characters")
        }
        if bytes.contains(0x20) { return error("must not contain spaces") }
        if bytes.contains(where: { $0 >= 0x80 }) {
            return error("must not contain non-ASCII characters (percent-encode them)")
        }
        // scheme "://" authority path-abempty [ "?" query ] [ "#" fragment ]
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else {
            return error("must be an absolute http or https URL")
        }
        let scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https" else { return error("must use the http or https scheme") }
        let rest = bytes[(colon + 1)...]
        guard rest.starts(with: Array("//".utf8)) else { return error("must be an absolute http or https URL") }
        let afterSlashes = rest.index(rest.startIndex, offsetBy: 2)
        let authorityEnd =
            rest[afterSlashes...].firstIndex(where: {
                $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
            })
            ?? rest.endIndex
        if let problem = checkAuthority(bytes[afterSlashes..<authorityEnd]) { return error(problem) }
        // path, query and fragment: pchar / "/" / "?" (and one "#" starting the fragment)
        var sawFragment = false
        var i = authorityEnd
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < bytes.endIndex, isHex(bytes[i + 1]), isHex(bytes[i + 2]) else {
                    return error("has an invalid percent-escape (% must be followed by two hex digits)")
                }
                i += 3
                continue
            }
            if b == UInt8(ascii: "#") {
                if sawFragment { return error("must not contain the character \"#\" twice") }
                sawFragment = true
            } else if !(isPathCharacter(b) || b == UInt8(ascii: "/") || b == UInt8(ascii: "?")) {
                return error("must not contain the character \"\(Character(Unicode.Scalar(b)))\"")
            }
            i += 1
        }
        return nil
    }

    /// `[ userinfo "@" ] host [ ":" port ]`; returns what is wrong, or nil.
    private static func checkAuthority(_ authority: ArraySlice<UInt8>) -> String? {
        var hostPort = authority
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            for b in authority[..<at]
            where !(isUnreserved(b) || isSubDelim(b) || b == UInt8(ascii: ":") || b == UInt8(ascii: "%")) {
                return "must not contain the character \"\(Character(Unicode.Scalar(b)))\""
            }
            hostPort = authority[(at + 1)...]
        }
        var host = hostPort
        var port: ArraySlice<UInt8>?
        if hostPort.first == UInt8(ascii: "[") {
            guard let close = hostPort.firstIndex(of: UInt8(ascii: "]")) else { return "has an invalid host" }
            host = hostPort[hostPort.startIndex...close]
            let inner = hostPort[(hostPort.startIndex + 1)..<close]
            guard !inner.isEmpty, inner.allSatisfy({ isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            else { return "has an invalid host" }
            let after = hostPort[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return "has an invalid host" }
                port = after.dropFirst()
            }
        } else if let colon = hostPort.lastIndex(of: UInt8(ascii: ":")) {
            host = hostPort[..<colon]
            port = hostPort[(colon + 1)...]
        }
        if host.isEmpty { return "must have a host" }
        if host.first != UInt8(ascii: "[") {
            for b in host where !(isUnreserved(b) || isSubDelim(b) || b == UInt8(ascii: "%")) {
                return "must not contain the character \"\(Character(Unicode.Scalar(b)))\" in its host"
            }
        }
        if let port, !port.isEmpty {
            guard port.count <= 5, port.allSatisfy({ (0x30...0x39).contains($0) }),
                let n = Int(String(decoding: port, as: UTF8.self)), (1...65_535).contains(n)
            else { return "has an invalid port (1 to 65535)" }
        }
        return nil
    }

    private static func isHex(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x46).contains(b) || (0x61...0x66).contains(b)
    }
    /// ALPHA / DIGIT / "-" / "." / "_" / "~"
    private static func isUnreserved(_ b: UInt8) -> Bool {
        (0x41...0x5a).contains(b) || (0x61...0x7a).contains(b) || (0x30...0x39).contains(b)
            || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
    }
    /// "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "="
    private static func isSubDelim(_ b: UInt8) -> Bool {
        Array("!$&'()*+,;=".utf8).contains(b)
    }
    /// pchar without pct-encoded: unreserved / sub-delims / ":" / "@"
    private static func isPathCharacter(_ b: UInt8) -> Bool {
        isUnreserved(b) || isSubDelim(b) || b == UInt8(ascii: ":") || b == UInt8(ascii: "@")
    }
}
