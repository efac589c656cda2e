// Response writing: turning a handler's response (or the server's own answer) into bytes on the
// connection, the status line and headers, and flushing them to the socket; after a response,
// the connection goes on to its next request, its stream or body, or closes.

import CHTTPParser
import Foundation

extension EventLoop {
    func respond(_ c: Connection, _ response: HTTPResponse) {
        if response.headers.contains(where: { $0.0.lowercased() == "connection" && $0.1.lowercased() == "close" }) {
            c.keepAlive = false
        }
        switch response.body {
        case .bytes(let body):
            c.output += serialize(response, head: c.isHead, keepAlive: c.keepAlive, http10: c.http10)
            c.phase = .writing(thenClose: !c.keepAlive)
            if !c.isHead { hold(c, body.count) }
        case .source(let source) where c.isHead || source.length == 0:
            c.output += serialize(response, head: c.isHead, keepAlive: c.keepAlive, http10: c.http10)
            c.phase = .writing(thenClose: !c.keepAlive)
        case .source(let source):
            // The head waits for the first chunk: if the budget has no room for it, or it cannot
            // be read, the answer is still free to be a 503.
            guard tryHold(c, min(source.length, source.chunkLimit)) else {
                server.responder.serverAnswered(status: 503)
                respond(
                    c,
                    Problem(
                        status: 503, code: .serverBusy, detail: "the gateway is sending too many responses; retry shortly",
                        retryAfter: 1
                    ).response)
                return
            }
            var lowWater = Int32(clamping: configuration.sourceNotSentLowWaterBytes)
            setsockopt(c.fd, Int32(IPPROTO_TCP), TCP_NOTSENT_LOWAT, &lowWater, socklen_t(MemoryLayout<Int32>.size))
            c.pendingHead = serialize(response, head: false, keepAlive: c.keepAlive, http10: c.http10)
            c.phase = .sourcing(source, remaining: source.length)
            startChunk(c, source)
            return
        case .stream(let stream) where c.isHead:
            // HEAD: the stream's head and nothing after it (RFC 9110 §9.3.2); the stream is
            // given up at once, so it holds no slot.
            c.output += serialize(response, head: true, keepAlive: false)
            c.keepAlive = false
            c.phase = .writing(thenClose: true)
            stream.finished()
        case .stream(let stream):
            c.output += serialize(response, head: false, keepAlive: false)
            c.keepAlive = false
            c.phase = .streaming(stream)
            armStreamWatch(c)  // the head written below may wait for the client
            c.input = []
            let server = self.server
            let id = c.id
            stream.attach { server.post(.streamReady(id)) }
        }
        flush(c)
    }

    /// Refuses the request the connection is on: answer, then close without reading further.
    func reject(_ c: Connection, _ answer: ServerAnswer) {
        server.responder.serverAnswered(status: answer.status)
        // An upload refused before its handler gives its share of the budget back now, not when
        // the lingering close ends.
        server.releaseLargeBody(c.reservedBodyBytes, peer: c.peer)
        c.reservedBodyBytes = 0
        c.authorizingBytes = nil
        c.keepAlive = false
        c.input = []
        c.output += serialize(answer.response, head: false, keepAlive: false)
        c.phase = .writing(thenClose: true)
        flush(c)
    }

    /// The status line, headers and (unless `head`) body. `Content-Length` is the body's,
    /// also for HEAD (RFC 9110 §9.3.2); none for 1xx, 204 and 304 or a stream.
    /// An HTTP/1.0 client kept alive is told so (`Connection: keep-alive`, RFC 9112 §9.3 and
    /// Appendix C.2.2): without it, it would expect the connection to close.
    func serialize(_ r: HTTPResponse, head: Bool, keepAlive: Bool, http10: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(r.status) \(HTTPStatus.reason(r.status))\r\nDate: \(httpDate())\r\n"
        for (name, value) in r.headers { text += "\(name): \(value)\r\n" }
        var body: [UInt8] = []
        if case .bytes(let bytes) = r.body {
            if r.status != 204 && r.status != 304 && r.status >= 200 {
                text += "Content-Length: \(bytes.count)\r\n"
                if !head { body = bytes }
            }
        } else if case .source(let source) = r.body {
            text += "Content-Length: \(source.length)\r\n"
        }
        if !keepAlive && !r.headers.contains(where: { $0.0.lowercased() == "connection" }) {
            text += "Connection: close\r\n"
        } else if keepAlive && http10 {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8) + body
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7) for the `Date` header, computed once a second.
    func httpDate() -> String {
        let seconds = now / 1000
        if seconds != dateSecond {
            dateSecond = seconds
            var t = time_t(seconds)
            var parts = tm()
            gmtime_r(&t, &parts)
            var out = [CChar](repeating: 0, count: 40)
            _ = strftime(&out, out.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            dateHeader = String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return dateHeader
    }

    func flush(_ c: Connection) {
        while c.outputOffset < c.output.count {
            let n = c.output.withUnsafeBytes {
                send(c.fd, $0.baseAddress! + c.outputOffset, $0.count - c.outputOffset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                c.outputOffset += n
                c.writtenTotal += n
                c.lastActivityMs = now
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                sampleAcknowledged(c)
                if !c.wantsWrite {
                    c.wantsWrite = true
                    modify(c)
                }
                return
            } else {
                closeNow(c)
                return
            }
        }
        c.output = []
        c.outputOffset = 0
        releaseHeld(c)
        if c.wantsWrite {
            c.wantsWrite = false
            modify(c)
        }
        switch c.phase {
        case .writing(let thenClose):
            if thenClose {
                lingeringClose(c)
            } else {
                c.phase = .reading
                c.scanningHead = true
                c.headLineLength = 0
                c.headLinesSeen = 0
                c.parser.pointee.data = Unmanaged.passUnretained(c).toOpaque()
                http_parser_pause(c.parser, 0)
                if !c.wantsRead && !c.peerClosed {
                    c.wantsRead = true
                    modify(c)
                }
                let pending = c.input
                c.input = []
                if !pending.isEmpty { pending.withUnsafeBytes { parse(c, $0) } }
                // A client that closed its side sends nothing more: once no whole request is
                // left to answer, the connection ends.
                if c.peerClosed, case .reading = c.phase { closeNow(c) }
            }
        case .streaming:
            pull(c)
        case .sourcing(let source, let remaining):
            requestChunk(c, source, remaining: remaining)
        default:
            break
        }
    }
}
