// HTTP/1.1 framing over http-parser, per connection: what the parser callbacks do with the
// request line, header fields and body as they arrive, the checks http-parser leaves to the server
// (RFC 9112), and the request taken out once it is whole.

import CHTTPParser
import Foundation
import Wire

extension Connection {
    func beginMessage() {
        target = []
        headers = []
        field = []
        value = []
        inValue = false
        headerBytes = 0
        body = []
        receivingBody = false
        chunked = nil
        chunkedStarted = false
        respond = nil
        requestStartedMs = loop?.now
    }

    func appendTarget(_ bytes: UnsafeRawBufferPointer) -> Bool {
        target.append(contentsOf: bytes)
        if target.count > limits.maxTargetBytes {
            answer = ServerAnswer(
                status: 414, code: .uriTooLong, detail: "the request target is over \(limits.maxTargetBytes) bytes")
            return false
        }
        return true
    }

    func appendField(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if inValue { commitHeader() }
        field.append(contentsOf: bytes)
        return countHeaderBytes(bytes.count)
    }

    func appendValue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        inValue = true
        value.append(contentsOf: bytes)
        return countHeaderBytes(bytes.count)
    }

    private func countHeaderBytes(_ n: Int) -> Bool {
        headerBytes += n
        if headerBytes > limits.maxHeaderBytes || headers.count >= limits.maxHeaderFields {
            answer = ServerAnswer(status: 431, code: .headerTooLarge, detail: "the request's header section is too large")
            return false
        }
        return true
    }

    private func commitHeader() {
        headers.append(
            (String(decoding: field, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self)))
        field = []
        value = []
        inValue = false
    }

    /// Whether the header section in `bytes` folds a line: a header line starting with a space
    /// or tab (RFC 9112 §5.2), which http-parser would join silently. Scans until the blank line
    /// that ends the header section, keeping its place across chunks.
    func headHasFolding(_ bytes: UnsafeRawBufferPointer) -> Bool {
        for b in bytes {
            switch b {
            case 0x0a:
                if headLineLength == 0 && headLinesSeen > 0 {
                    scanningHead = false  // the blank line: the header section ends here
                    return false
                }
                if headLineLength > 0 { headLinesSeen += 1 }
                headLineLength = 0
            case 0x0d:
                continue
            default:
                if headLineLength == 0 && headLinesSeen > 0 && (b == 0x20 || b == 0x09) { return true }
                headLineLength += 1
            }
        }
        return false
    }

    /// Checks what http-parser leaves to the server; false refuses the request (`answer` set).
    func headersComplete() -> Bool {
        if inValue || !field.isEmpty { commitHeader() }
        let p = parser.pointee
        func refuse(_ status: Int, _ code: ProblemCode, _ detail: String) -> Bool {
            answer = ServerAnswer(status: status, code: code, detail: detail)
            return false
        }
        if p.http_major != 1 {
            return refuse(505, .httpVersionNotSupported, "only HTTP/1.0 and HTTP/1.1 are served")
        }
        for (name, value) in headers {
            // RFC 9112 §5.1: no whitespace between a field name and its colon; §5.2: no
            // obsolete line folding.
            if name.isEmpty || name.utf8.contains(where: { $0 == 0x20 || $0 == 0x09 }) {
                return refuse(400, .badRequest, "whitespace in or after a header field name")
            }
            if value.utf8.contains(where: { $0 == 0x0d || $0 == 0x0a || $0 == 0 }) {
                return refuse(400, .badRequest, "a header field value holds a line break (obsolete folding) or NUL")
            }
        }
        let hosts = headers.filter { $0.name == "host" }.count
        if p.http_minor >= 1 && hosts != 1 {
            return refuse(400, .badRequest, "an HTTP/1.1 request needs exactly one Host header (RFC 9112 §3.2)")
        }
        // Not lists (RFC 9110 §5.3): which credentials (§11.6.2) or which media type (§8.3) would
        // count is ambiguous.
        for (name, shown) in [("authorization", "Authorization"), ("content-type", "Content-Type")]
        where headers.filter({ $0.name == name }).count > 1 {
            answer = ServerAnswer(
                Problem(
                    status: 400, code: .duplicateHeader, detail: "the \(shown) header appears more than once",
                    errors: [FieldError(field: shown, code: .duplicateHeader, message: "may appear only once")]))
            return false
        }
        let codings = headers.filter { $0.name == "transfer-encoding" }.map(\.value)
        if !codings.isEmpty {
            let list = codings.joined(separator: ",").split(separator: ",").map {
                $0.trimmingOptionalWhitespace().lowercased()
            }
            if list != ["chunked"] {
                return refuse(501, .unsupportedTransferCoding, "only the chunked transfer coding is implemented")
            }
        }
        method = Self.method(http_method(rawValue: p.method))
        isHead = method == .head
        target = Self.originForm(target)
        let path = String(decoding: target.prefix { $0 != UInt8(ascii: "?") }, as: UTF8.self)
        let route = loop?.server.responder.route(method, path: path, headers: HTTPHeaders(fields: headers))
        bodyLimit = route?.maxBodyBytes ?? limits.maxBodyBytes
        respond = route?.respond
        // Whether the body may come in at all: the admission policy decides from the head.
        let admission = loop?.admission ?? AdmissionPolicy(limits)
        let declared = p.flags & UInt32(F_CONTENTLENGTH.rawValue) != 0 ? p.content_length : nil
        switch admission.decide(bodyLimit: bodyLimit, declaredLength: declared, headers: headers) {
        case .admit:
            break
        case .authorizeUpload(let reserving):
            // The budget is taken only once the token is known to be valid (`authorize`): made-up
            // tokens must not hold it.
            authorizingBytes = reserving
        case .refuse(let refusal):
            answer = refusal.answer
            return false
        }
        if p.flags & UInt32(F_CONTENTLENGTH.rawValue) != 0 {
            // Room for the declared body at once: growing by doubling would briefly hold it twice.
            body.reserveCapacity(Int(p.content_length))
        }
        if let expect = headers.first(where: { $0.name == "expect" })?.value {
            guard expect.lowercased() == "100-continue" else {
                return refuse(417, .expectationFailed, "only Expect: 100-continue is understood")
            }
            output += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)  // written when the parser returns
        }
        keepAlive = http_should_keep_alive(parser) != 0
        http10 = p.http_minor == 0
        if method == .connect || headers.contains(where: { $0.name == "upgrade" }) {
            // No tunnel and no other protocol is offered: the request is answered as a plain
            // one, then the connection closes, so what the client sends next (its tunnel's or
            // the new protocol's bytes) is never read as a request.
            keepAlive = false
        }
        receivingBody = true
        if p.flags & UInt32(F_CHUNKED.rawValue) != 0 {
            // The body is `ChunkedDecoder`'s (strict framing, trailers dropped); http-parser
            // stops here.
            chunked = ChunkedDecoder(limit: bodyLimit, maxTrailerBytes: limits.maxHeaderBytes)
            http_parser_pause(parser, 1)
        }
        if authorizingBytes != nil { http_parser_pause(parser, 1) }  // until `authorized`
        return true
    }

    /// The origin form of a request target: an absolute-form target (`http://host/path?q`,
    /// RFC 9112 §3.2.2, which a server must accept) loses its scheme and authority (`/path?q`;
    /// `/` when it has no path); any other target is returned as it is.
    static func originForm(_ target: [UInt8]) -> [UInt8] {
        guard target.first != UInt8(ascii: "/"), let colon = target.firstIndex(of: UInt8(ascii: ":")) else { return target }
        let scheme = String(decoding: target[..<colon], as: UTF8.self).lowercased()
        guard scheme == "http" || scheme == "https", target[colon...].starts(with: Array("://".utf8)) else { return target }
        let authority = colon + 3
        let end = target[authority...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? target.count
        var out = Array(target[end...])
        if out.first != UInt8(ascii: "/") { out.insert(UInt8(ascii: "/"), at: 0) }
        return out
    }

    func appendBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if body.count + bytes.count > bodyLimit {
            answer = ServerAnswer(status: 413, code: .payloadTooLarge, detail: "the body is over \(bodyLimit) bytes")
            return false
        }
        body.append(contentsOf: bytes)
        rateWindowBytes += bytes.count
        return true
    }

    /// The method http-parser read (it knows the standard ones by number; any other it knows
    /// by name).
    static func method(_ parsed: http_method) -> HTTPMethod {
        switch parsed {
        case HTTP_GET: .get
        case HTTP_HEAD: .head
        case HTTP_POST: .post
        case HTTP_PUT: .put
        case HTTP_PATCH: .patch
        case HTTP_DELETE: .delete
        case HTTP_OPTIONS: .options
        case HTTP_CONNECT: .connect
        default: .other(String(cString: http_method_str(parsed)))
        }
    }

    /// The request received and what answers it (its route's handler), moved out of the connection.
    func takeRequest() -> (HTTPRequest, respond: (@Sendable (HTTPRequest) async -> HTTPResponse)?) {
        let targetText = String(decoding: target, as: UTF8.self)
        let path: String
        var query: String?
        if let q = targetText.firstIndex(of: "?") {
            path = String(targetText[..<q])
            query = String(targetText[targetText.index(after: q)...])
        } else {
            path = targetText
        }
        let request = HTTPRequest(
            method: method, path: path, rawQuery: query, headers: HTTPHeaders(fields: headers), body: body,
            peerAddress: peer)
        let respond = self.respond
        self.respond = nil
        target = []
        headers = []
        body = []
        return (request, respond)
    }
}
