import BackendKit
import Foundation
import Messages
import ServiceKit
import Support
import Testing
import Transport

@testable import Gateway

/// The HTTP/1.1 server on its own (in process, real sockets on loopback): message framing per
/// RFC 9112 §6, the answers it writes by itself (always problem details), HEAD, pipelining,
/// limits and overload.
@Suite struct HTTPServerTests {
    /// A server whose handler answers `{"path","bodyBytes"}` and counts the requests it
    /// saw by path.
    final class Echo: Sendable {
        let server: HTTPServer
        let port: Int
        let seen = Locked<[String]>([])

        init(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws {
            var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
            configure(&configuration)
            let seen = self.seen
            let handler: @Sendable (HTTPRequest) async -> HTTPResponse = { request in
                seen.withLock { $0.append(request.path) }
                let body = #"{"path":"\#(request.path)","bodyBytes":\#(request.body.count)}"#
                return .json(status: 200, bytes: Array(body.utf8))
            }
            server = HTTPServer(
                configuration: configuration, logger: Logger(service: "test", minimum: .error),
                responder: TestResponder(maxBodyBytes: { $0 == "/small" ? 10 : nil }, handler: handler))
            port = try server.start()
        }

        deinit { server.shutdownGracefully() }

        /// Sends `raw` on a new connection; returns every response until the server closes it.
        func exchange(_ raw: String) throws -> (responses: [RawResponse], closed: Bool) {
            let c = try RawConnection(port: port, timeoutSeconds: 10)
            try c.send(raw)
            let data = c.readToEnd()
            return (RawResponse.parseAll(data), true)
        }
    }

    private func expectProblem(
        _ r: RawResponse?, _ status: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let r else {
            Issue.record("no response", sourceLocation: sourceLocation)
            return
        }
        #expect(r.status == status, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
        #expect(r.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(r.json["status"] as? Int == status && r.json["code"] is String, sourceLocation: sourceLocation)
        #expect(r.header("Connection")?.lowercased() == "close", sourceLocation: sourceLocation)
    }

    @Test func contentLengthWithTransferEncodingIsRefusedAndNothingAfterItIsRead() throws {
        let echo = try Echo()
        let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        let (responses, _) = try echo.exchange(
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: \(5 + smuggled.utf8.count)\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\(smuggled)"
        )
        #expect(responses.count == 1)
        expectProblem(responses.first, 400)
        #expect(echo.seen.withLock { $0 }.isEmpty)
    }

    @Test func contentLengthsThatDifferAreRefused() throws {
        let echo = try Echo()
        let (responses, _) = try echo.exchange(
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 40\r\n\r\nabcGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        #expect(responses.count == 1)
        expectProblem(responses.first, 400)
        #expect(echo.seen.withLock { $0 }.isEmpty)
    }

    @Test func anUnknownTransferCodingIsNotImplemented() throws {
        let echo = try Echo()
        for coding in ["gzip", "gzip, chunked", "chunked, chunked"] {
            let (responses, _) = try echo.exchange("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n\r\n0\r\n\r\n")
            #expect(responses.count == 1, "\(coding)")
            expectProblem(responses.first, 501)
        }
        #expect(echo.seen.withLock { $0 }.isEmpty)
    }

    @Test func chunkedBodiesAreReadWhole() throws {
        let echo = try Echo()
        let (responses, _) = try echo.exchange(
            "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        )
        #expect(responses.first?.status == 200)
        #expect(responses.first?.json["bodyBytes"] as? Int == 5)
    }

    @Test func everyAnswerTheServerWritesItselfIsProblemDetails() throws {
        let echo = try Echo { $0.maxHeaderBytes = 4_096 }
        let cases: [(String, Int)] = [
            ("GARBAGE\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            ("GET / HTTP/3.1\r\nHost: x\r\n\r\n", 505),
            ("FROB / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
            ("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 8_000))\r\n\r\n", 431),
            ("GET / HTTP/1.1\r\n\r\n", 400),  // HTTP/1.1 without Host (RFC 9112 §3.2)
            ("GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),  // whitespace before the colon (§5.1)
            ("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400),  // obsolete line folding (§5.2)
            ("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", 413),  // refused before the body
            ("GET /\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("POST /a HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\nx", 417),
        ]
        for (raw, status) in cases {
            let (responses, _) = try echo.exchange(raw)
            #expect(responses.count == 1, "\(raw.prefix(40))")
            expectProblem(responses.first, status)
        }
        #expect(echo.seen.withLock { $0 }.isEmpty)
    }

    @Test func headAnswersAsGetWouldWithoutTheBody() throws {
        let echo = try Echo()
        let get = try echo.exchange("GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").responses
        let c = try RawConnection(port: echo.port)
        try c.send("HEAD /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let head = String(decoding: c.readToEnd(), as: UTF8.self)
        #expect(get.first?.status == 200)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("Content-Length: \(get.first?.body.count ?? -1)\r\n"))
        #expect(head.hasSuffix("\r\n\r\n"))  // headers only: the body is not sent
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let echo = try Echo()
        let c = try RawConnection(port: echo.port)
        try c.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n")
        let responses = c.readResponses(3)
        #expect(responses.map { $0.json["path"] as? String } == ["/1", "/2", "/3"])
    }

    /// A client that sends its requests and then closes its side still gets every answer, then
    /// the connection closes.
    @Test func pipelinedRequestsBeforeAHalfCloseAreAllAnswered() throws {
        let echo = try Echo()
        for _ in 0..<20 {
            let c = try RawConnection(port: echo.port)
            try c.send((1...10).map { "GET /\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
            c.shutdownWrite()
            let responses = RawResponse.parseAll(c.readToEnd())
            #expect(responses.map { $0.json["path"] as? String } == (1...10).map { "/\($0)" })
        }
    }

    @Test func expectContinueIsAnsweredBeforeTheBody() throws {
        let echo = try Echo()
        let c = try RawConnection(port: echo.port)
        try c.send("POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        let interim = c.readResponses(1)
        #expect(interim.first?.status == 100)
        try c.send("abc")
        let final = RawResponse.parseAll(Array("".utf8))
        #expect(final.isEmpty)
        let both = c.readResponses(1)
        #expect(both.first?.status == 200 && both.first?.json["bodyBytes"] as? Int == 3)
    }

    @Test func aConnectionPastTheLimitGetsAFast503() throws {
        let echo = try Echo { $0.maxConnections = 2 }
        let a = try RawConnection(port: echo.port)
        let b = try RawConnection(port: echo.port)
        // Both are accepted (a request on each is answered), so the next one is past the limit.
        for c in [a, b] {
            try c.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(c.readResponses(1).first?.status == 200)
        }
        let third = try RawConnection(port: echo.port)
        let data = third.readToEnd()
        expectProblem(RawResponse.parseAll(data).first, 503)
    }
}

/// Where the HTTP server's handlers run (`LoopExecutor`): on the loop thread, before and after an
/// await that resumed on another thread, so a request costs no handoff to the global pool.
@Suite struct HTTPServerExecutorTests {
    @Test func handlersRunOnTheLoopThreadAcrossAwaits() throws {
        let serverBox = Locked<HTTPServer?>(nil)
        let server = HTTPServer(
            configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0),
            logger: Logger(service: "test", minimum: .error)
        ) { _ in
            let executor = serverBox.withLock { $0!.executor }
            let first = executor.isLoopThread
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async { c.resume() }
            }
            let body = #"{"threads":"\#(first)|\#(executor.isLoopThread)"}"#
            return .json(status: 200, bytes: Array(body.utf8))
        }
        serverBox.withLock { $0 = server }
        let port = try server.start()
        defer { server.shutdownGracefully() }
        let c = try RawConnection(port: port, timeoutSeconds: 10)
        try c.send("GET /where HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let response = RawResponse.parseAll(c.readToEnd()).first
        #expect(response?.status == 200)
        #expect(response?.json["threads"] as? String == "true|true")
    }
}

/// The route is looked up once per request, when its head arrives (`HTTPResponder.route`): the
/// handler the lookup gave answers the request, and its body limit applies.
@Suite struct HTTPServerRouteOnceTests {
    /// Counts its lookups; its handler says which lookup made it.
    struct Counting: HTTPResponder {
        let lookups: Locked<[String]>
        func route(_ method: HTTPMethod, path: String, headers: HTTPHeaders) -> HTTPRoute {
            lookups.withLock { $0.append("\(method) \(path)") }
            return HTTPRoute(maxBodyBytes: path == "/small" ? 4 : nil) { _ in
                .json(status: 200, bytes: Array(#"{"routed":"looked up \#(path)"}"#.utf8))
            }
        }
    }

    @Test func theLookupRunsOncePerRequestAndItsResultReachesTheHandler() throws {
        let lookups = Locked<[String]>([])
        let server = HTTPServer(
            configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0),
            logger: Logger(service: "test", minimum: .error), responder: Counting(lookups: lookups))
        let port = try server.start()
        defer { server.shutdownGracefully() }
        let c = try RawConnection(port: port, timeoutSeconds: 10)
        try c.send(
            "GET /a?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n12345")
        let responses = RawResponse.parseAll(c.readToEnd())
        #expect(responses.first?.json["routed"] as? String == "looked up /a")
        #expect(responses.count == 2 && responses.last?.status == 413)  // the lookup's limit, 4 bytes
        #expect(lookups.withLock { $0 } == ["GET /a", "POST /small"])
    }
}

/// The loop drives the RPC clients given to it (`RPCPump`): a handler's call is sent and its
/// reply read on the loop thread; a driven client has no thread of its own, so without the loop
/// the call would never leave.
@Suite struct HTTPServerDrivenClientTests {
    @Test func aHandlersCallIsSentAndAnsweredOnTheLoopThread() async throws {
        let context = ZMQContext()
        let logger = Logger(service: "test", minimum: .error)
        let host = ServiceHost(
            name: "profile", context: context, rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*",
            database: nil, logger: logger)
        host.on(Profile.Header.self) { request, _ in
            .init(user: PublicUser(id: "u1", username: request.username, name: "", bio: "", profilePhotoURL: nil), postCount: 7)
        }
        try host.start()
        defer { host.stop() }
        let wakeup = Wakeup()
        let executor = LoopExecutor(wakeup: wakeup)
        let client = try RPCClient(
            service: "profile", endpoint: host.boundEndpoints.withLock { $0.rpc }, context: context, logger: logger,
            drivenBy: executor, wakeup: wakeup)
        let server = HTTPServer(
            configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0), logger: logger,
            loop: (executor, wakeup),
            handler: { _ in
                let before = executor.isLoopThread
                let reply = try? await client.call(Profile.Header.self, .init(username: "alice"), timeoutMs: 10_000)
                let body = #"{"count":\#(reply?.postCount ?? -1),"onLoop":"\#(before)|\#(executor.isLoopThread)"}"#
                return .json(status: 200, bytes: Array(body.utf8))
            })
        server.drive([client])
        let port = try server.start()
        defer { server.shutdownGracefully() }
        // The client connects in the background, and only while the loop turns its pump.
        for _ in 0..<500 where !client.isConnected { try await Task.sleep(for: .milliseconds(10)) }
        #expect(client.isConnected)
        let c = try RawConnection(port: port, timeoutSeconds: 10)
        try c.send("GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answer = RawResponse.parseAll(c.readToEnd()).first
        #expect(answer?.json["count"] as? Int == 7)
        #expect(answer?.json["onLoop"] as? String == "true|true")
    }
}
