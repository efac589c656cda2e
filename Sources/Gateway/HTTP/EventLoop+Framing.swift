// HTTP/1.1 framing over http-parser, on the loop: feeding a connection's bytes to http-parser (or
// to its `ChunkedDecoder`), the answers to what http-parser refuses, and the C callbacks that
// hand the parser's pieces to the `Connection`.

import CHTTPParser

extension EventLoop {
    func parse(_ c: Connection, _ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if c.chunkedStarted {
            decodeChunked(c, bytes)
            return
        }
        if c.scanningHead, c.headHasFolding(bytes) {
            reject(c, ServerAnswer(status: 400, code: .badRequest, detail: "obsolete line folding in a header (RFC 9112 §5.2)"))
            return
        }
        c.parser.pointee.data = Unmanaged.passUnretained(c).toOpaque()
        let parsed = http_parser_execute(
            c.parser, settings, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count)
        let error = http_errno(rawValue: c.parser.pointee.http_errno)
        if let answer = c.answer {
            c.answer = nil
            reject(c, answer)
        } else if error == HPE_PAUSED, let declared = c.authorizingBytes {
            // An upload's head is in: its credentials are checked before it takes any budget,
            // and its body waits unread meanwhile.
            if parsed < bytes.count { c.input = Array(bytes[parsed...]) }
            c.wantsRead = false
            modify(c)
            authorize(c, declared)
        } else if error == HPE_PAUSED, c.chunked != nil {
            // A chunked request's head is in (http-parser stopped at the LF that ends it): its
            // body is decoded here, strictly, never by http-parser.
            guard parsed < bytes.count, bytes[parsed] == 0x0a else {
                reject(c, ServerAnswer(status: 400, code: .badRequest, detail: "the header section does not end with CRLF"))
                return
            }
            c.chunkedStarted = true
            decodeChunked(c, UnsafeRawBufferPointer(rebasing: bytes[(parsed + 1)...]))
        } else if error == HPE_PAUSED {
            // A whole request was dispatched; what follows it waits.
            if parsed < bytes.count { c.input = Array(bytes[parsed...]) }
        } else if error != HPE_OK {
            if error == HPE_INVALID_METHOD, let (method, path) = Self.requestLine(bytes),
                let given = server.responder.unknownMethod(method, path: path)
            {
                reject(c, ServerAnswer(given))
            } else {
                reject(c, Self.answer(for: error, start: bytes))
            }
        } else if !c.output.isEmpty, case .reading = c.phase {
            flush(c)  // 100 Continue
        }
    }

    /// Feeds a chunked body to the connection's `ChunkedDecoder`: a framing error is 400 and
    /// closes the connection (RFC 9112 §7.1; nothing after it is read as a request); a whole
    /// body dispatches the request, and the bytes after it wait for the next one.
    func decodeChunked(_ c: Connection, _ bytes: UnsafeRawBufferPointer) {
        guard var decoder = c.chunked else { return }
        let outcome = decoder.feed(bytes) { c.appendBody($0) }
        c.chunked = decoder
        switch outcome {
        case .needMore:
            if !c.output.isEmpty, case .reading = c.phase { flush(c) }  // 100 Continue
        case .complete(let consumed):
            c.chunked = nil
            c.chunkedStarted = false
            dispatch(c)
            // http-parser was left paused after the head; the next request gets a fresh one.
            http_parser_init(c.parser, HTTP_REQUEST)
            if consumed < bytes.count { c.input = Array(bytes[consumed...]) }
        case .invalid(let why):
            reject(c, ServerAnswer(status: 400, code: .badRequest, detail: "\(why) (RFC 9112 §7.1)"))
        case .tooLarge:
            reject(c, ServerAnswer(status: 413, code: .payloadTooLarge, detail: "the body is over \(c.bodyLimit) bytes"))
        case .refused:
            reject(c, c.answer ?? ServerAnswer(status: 400, code: .badRequest, detail: "the body was refused"))
            c.answer = nil
        }
    }

    /// What to answer a request http-parser refused; `start` holds the bytes it was given.
    static func answer(for error: http_errno, start: UnsafeRawBufferPointer) -> ServerAnswer {
        switch error {
        case HPE_HEADER_OVERFLOW:
            return ServerAnswer(status: 431, code: .headerTooLarge, detail: "the request's header section is too large")
        case HPE_INVALID_TRANSFER_ENCODING:
            return ServerAnswer(
                status: 501, code: .unsupportedTransferCoding, detail: "only the chunked transfer coding is implemented")
        case HPE_UNEXPECTED_CONTENT_LENGTH:
            return ServerAnswer(
                status: 400, code: .ambiguousLength,
                detail: "Content-Length together with Transfer-Encoding, or more than one Content-Length (RFC 9112 §6.3)")
        case HPE_INVALID_CONTENT_LENGTH:
            return ServerAnswer(status: 400, code: .badRequest, detail: "Content-Length is not a number")
        case HPE_INVALID_CHUNK_SIZE:
            return ServerAnswer(status: 400, code: .badRequest, detail: "the chunk size is not a hex number (RFC 9112 §7.1)")
        case HPE_INVALID_METHOD:
            if requestLine(start) != nil {
                return ServerAnswer(status: 501, code: .methodNotImplemented, detail: "the method is not implemented")
            }
            return ServerAnswer(status: 400, code: .badRequest, detail: "the request line is malformed")
        case HPE_INVALID_VERSION:
            return ServerAnswer(status: 505, code: .httpVersionNotSupported, detail: "only HTTP/1.0 and HTTP/1.1 are served")
        default:
            return ServerAnswer(
                status: 400, code: .badRequest,
                detail: "the request is malformed: \(String(cString: http_errno_description(error)))")
        }
    }

    /// The method and path of `bytes` if they start with `token SP target SP HTTP/`: a
    /// well-formed request line whose method http-parser does not know (RFC 9110 §9.1) rather
    /// than garbage (400).
    static func requestLine(_ bytes: UnsafeRawBufferPointer) -> (String, String)? {
        let line = bytes.prefix { $0 != 0x0d && $0 != 0x0a }
        let parts = line.split(separator: 0x20, omittingEmptySubsequences: false)
        let tchar = Set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].count <= 32, parts[0].allSatisfy({ tchar.contains($0) }),
            !parts[1].isEmpty, parts[2].starts(with: Array("HTTP/".utf8))
        else { return nil }
        let target = parts[1].prefix { $0 != UInt8(ascii: "?") }
        return (String(decoding: parts[0], as: UTF8.self), String(decoding: target, as: UTF8.self))
    }

    // MARK: http-parser callbacks

    static func connection(_ p: UnsafeMutablePointer<http_parser>?) -> Connection {
        Unmanaged<Connection>.fromOpaque(p!.pointee.data).takeUnretainedValue()
    }

    static func installCallbacks(_ s: UnsafeMutablePointer<http_parser_settings>) {
        s.pointee.on_message_begin = { p in
            EventLoop.connection(p).beginMessage()
            return 0
        }
        s.pointee.on_url = { p, at, length in
            EventLoop.connection(p).appendTarget(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_header_field = { p, at, length in
            EventLoop.connection(p).appendField(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_header_value = { p, at, length in
            EventLoop.connection(p).appendValue(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_headers_complete = { p in
            // 0: go on; -1: refuse (http-parser treats 1 and 2 as "no body", never wanted here).
            EventLoop.connection(p).headersComplete() ? 0 : -1
        }
        s.pointee.on_body = { p, at, length in
            EventLoop.connection(p).appendBody(UnsafeRawBufferPointer(start: at, count: length)) ? 0 : 1
        }
        s.pointee.on_message_complete = { p in
            let c = EventLoop.connection(p)
            c.loop?.dispatch(c)
            http_parser_pause(p, 1)
            return 0
        }
    }
}
