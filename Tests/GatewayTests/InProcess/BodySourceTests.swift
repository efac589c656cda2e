import Foundation
import Harness
import Support
import Testing

@testable import Gateway

/// Bodies produced chunk by chunk (`BodySource`, how media is served): `Content-Length` up front, one
/// chunk asked for at a time, keep-alive after the last one, HEAD without asking for any, and a failing
/// source ending the connection short.
@Suite struct BodySourceTests {
    final class Server: Sendable {
        let server: HTTPServer
        let port: Int
        /// Chunks asked for, over all requests.
        let asked = Locked(0)

        init() throws {
            let asked = self.asked
            server = HTTPServer(
                configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0),
                logger: Logger(service: "test", minimum: .error)
            ) { request in
                let chunks: [[UInt8]] = [Array(repeating: 0x61, count: 70_000), Array("bc".utf8), Array("def".utf8)]
                let broken = request.path == "/broken"
                let next = Locked(0)
                var response = HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")])
                response.body = .source(
                    BodySource(length: 70_005) {
                        asked.withLock { $0 += 1 }
                        let i = next.withLock { n -> Int in
                            defer { n += 1 }
                            return n
                        }
                        if broken && i == 1 { return nil }
                        return i < chunks.count ? chunks[i] : nil
                    })
                return response
            }
            port = try server.start()
        }

        deinit { server.shutdownGracefully() }
    }

    @Test func chunksAreSentWithTheirLengthAndTheConnectionIsKeptAlive() throws {
        let s = try Server()
        let c = try RawConnection(port: s.port, timeoutSeconds: 10)
        try c.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let responses = RawResponse.parseAll(c.readToEnd())
        #expect(responses.count == 2)
        for r in responses {
            #expect(r.status == 200 && r.header("Content-Length") == "70005")
            #expect(r.body == Array(repeating: 0x61, count: 70_000) + Array("bcdef".utf8))
        }
        #expect(s.asked.withLock { $0 } == 6)
    }

    @Test func headAsksForNoChunk() throws {
        let s = try Server()
        let c = try RawConnection(port: s.port, timeoutSeconds: 10)
        try c.send("HEAD /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let text = String(decoding: c.readToEnd(), as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200") && text.contains("Content-Length: 70005\r\n") && text.hasSuffix("\r\n\r\n"))
        #expect(s.asked.withLock { $0 } == 0)
    }

    @Test func aFailingSourceEndsTheConnectionShort() throws {
        let s = try Server()
        let c = try RawConnection(port: s.port, timeoutSeconds: 10)
        try c.send("GET /broken HTTP/1.1\r\nHost: x\r\n\r\n")
        let data = c.readToEnd()
        let head = String(decoding: data.prefix(200), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200") && head.contains("Content-Length: 70005"))
        let headEnd =
            (0..<max(0, data.count - 3)).first { data[$0..<($0 + 4)].elementsEqual([13, 10, 13, 10]) }.map { $0 + 4 } ?? 0
        #expect(data.count - headEnd == 70_000, "only the first chunk, then the connection closes")
    }
}
