import Foundation
import Support
import Wire

/// How the gateway writes its own links: the media URLs it hands out (`Media.url` and
/// `thumbnailURL`, `profilePhotoURL`, a post's `mediaURL` and `thumbnailURL` when they are uploads:
/// `/media/{id}/{variant}`) and the OpenAPI document's `servers`.
///
/// Relative by default (`/media/...`, a server URL of `/`): a client resolves them against the URL it
/// called, so they stay right behind any front (nginx terminating TLS, an Ingress) and on any host
/// name. With `GATEWAY_PUBLIC_URL` (e.g. `https://api.example.com`) they are absolute on it. The
/// gateway never builds a link from what it sees itself (its address, `Host`, its own plain-HTTP
/// scheme), so no `http://` from behind the TLS front reaches a client.
struct PublicLinks: Sendable {
    /// The public base URL without a trailing slash, or nil for relative links.
    let base: String?

    /// The members whose string value is a link the gateway made, when it starts with `/media/`.
    static let linkMembers: Set<String> = ["url", "thumbnailURL", "mediaURL", "profilePhotoURL"]

    /// The process's links, from `GATEWAY_PUBLIC_URL` (`GatewayConfiguration` refuses a bad value at
    /// start, so one that does not parse never serves).
    static let current = PublicLinks(base: try? parse(Environment().optionalString("GATEWAY_PUBLIC_URL")))

    /// Checks a public base URL: `https://host[:port]` (a trailing `/` is dropped), or `http://` for a
    /// loopback host only (`localhost`, `127.x.x.x`, `[::1]`: a laptop); no path, query, fragment or
    /// user. nil or empty: nil (relative links).
    /// - Throws: `InvalidPublicURL` naming `GATEWAY_PUBLIC_URL`.
    static func parse(_ raw: String?) throws -> String? {
        guard let raw, !raw.isEmpty else { return nil }
        let value = raw.hasSuffix("/") ? String(raw.dropLast()) : raw
        func invalid(_ expected: String) -> InvalidPublicURL { InvalidPublicURL(value: raw, expected: expected) }
        guard value.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f && $0 != "\"" && $0 != "\\" }),
            let url = URLComponents(string: value), let scheme = url.scheme?.lowercased(), let host = url.host,
            !host.isEmpty
        else { throw invalid("an absolute URL such as https://api.example.com") }
        guard url.path.isEmpty, url.query == nil, url.fragment == nil, url.user == nil, url.password == nil else {
            throw invalid("scheme, host and port only (the API is served at the root)")
        }
        let loopback = host == "localhost" || host.hasPrefix("127.") || host == "[::1]" || host == "::1"
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw invalid("https:// (http:// only for localhost)")
        }
        return value
    }

    /// `json` (an API body written by `JSONWriter`) with every link member whose value starts with
    /// `/media/` made absolute on `base`; unchanged without one. A member is found by its bytes
    /// `"name":"/media/`: `JSONWriter` writes no space around `:`, and escapes every `"` inside a
    /// string as `\"`, so `":"` occurs only between a member's name and its string value, never in a
    /// value a user wrote.
    func absolutized(_ json: [UInt8]) -> [UInt8] {
        guard let base else { return json }
        let marker = Array("\":\"/media/".utf8)
        let prefix = Array(base.utf8)
        var out: [UInt8] = []
        var copied = 0
        var i = 0
        json.withUnsafeBufferPointer { bytes in
            while i + marker.count <= bytes.count {
                var k = 0
                while k < marker.count && bytes[i + k] == marker[k] { k += 1 }
                guard k == marker.count else {
                    i += 1
                    continue
                }
                // The member's name: back to its opening quote (names are the shapes' own, unescaped).
                var start = i - 1
                while start >= 0 && bytes[start] != 0x22 { start -= 1 }
                if start >= 0, let name = String(bytes: bytes[(start + 1)..<i], encoding: .utf8),
                    Self.linkMembers.contains(name)
                {
                    if out.isEmpty { out.reserveCapacity(json.count + 8 * prefix.count) }
                    let valueStart = i + 3  // after `":"`
                    out.append(contentsOf: bytes[copied..<valueStart])
                    out.append(contentsOf: prefix)
                    copied = valueStart
                }
                i += marker.count
            }
        }
        guard copied > 0 else { return json }
        out.append(contentsOf: json[copied...])
        return out
    }

    /// The OpenAPI document with its `servers` set to `[{"url": base}]`; unchanged without a base
    /// (docs/openapi.json says `/`: relative to where the document was read). The document's
    /// `"servers": [...]` holds no nested array.
    func openAPIDocument(_ document: [UInt8]) -> [UInt8] {
        guard let base else { return document }
        let key = Array("\"servers\":".utf8)
        guard let keyAt = Self.firstIndex(of: key, in: document),
            let open = document[(keyAt + key.count)...].firstIndex(of: UInt8(ascii: "[")),
            let close = document[open...].firstIndex(of: UInt8(ascii: "]"))
        else { return document }
        var servers = Array("[{\"url\": ".utf8)
        JSONWriter.appendString(base, to: &servers)
        servers += Array(", \"description\": \"this deployment (GATEWAY_PUBLIC_URL)\"}]".utf8)
        return Array(document[..<open]) + servers + Array(document[(close + 1)...])
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

/// A `GATEWAY_PUBLIC_URL` that cannot be the public base URL (the gateway does not start).
struct InvalidPublicURL: Error, CustomStringConvertible {
    var value: String
    var expected: String
    var description: String { "invalid GATEWAY_PUBLIC_URL=\(value): expected \(expected)" }
}
