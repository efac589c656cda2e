import Foundation
import Messages
import Support
import Synchronization
import TestSupport
import Testing
import Wire

@testable import Gateway

#if canImport(Glibc)
    import Glibc
#endif

/// HTTP/1.1 framing and the loose edges the third hostile trial found (issue 18, points 4 and
/// 5), through the real Gateway executable with hand-written bytes on raw sockets.
@Suite struct HTTPFramingTests {
    /// Sends `text` on a new connection and reads every response until the gateway closes it.
    private func exchange(_ h: GatewayHarness, _ text: String) throws -> [RawResponse] {
        let c = try RawConnection(port: h.port, timeoutSeconds: 30)
        try c.send(text)
        return RawResponse.parseAll(c.readToEnd())
    }

    /// A chunked request's head for `path` with the given extra header lines.
    private func chunkedHead(_ method: String, _ path: String, _ extra: String = "") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\(extra)\r\n"
    }

    private let next = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"

    // MARK: 415

    @Test func aJSONRouteRefusesABodyThatDoesNotSayItIsJSON() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let body = Array(#"{"allSessions":false}"#.utf8)
        for type in [nil, "text/plain", "application/x-www-form-urlencoded"] {
            let r = try await h.request(
                "POST", "/v1/auth/logout", token: alice, raw: body, headers: type.map { ["Content-Type": $0] } ?? [:])
            #expect(r.status == 415, "Content-Type \(type ?? "absent")")
            #expect(r.object["code"] as? String == "unsupported_media_type")
            #expect(r.header("Accept-Post") == "application/json")
        }
        // A media type parameter is fine.
        let ok = try await h.request(
            "POST", "/v1/auth/logout", token: alice, raw: body, headers: ["Content-Type": "application/json; charset=utf-8"])
        #expect(ok.status == 200)
    }

    // MARK: Range

    @Test func aLastPositionPastTheEndIsClampedHoweverLarge() {
        #expect(ByteRange.parse("bytes=0-99999999999999999999999", size: 1000) == .range(0..<1000))
        #expect(ByteRange.parse("bytes=10-\(String(repeating: "9", count: 40))", size: 1000) == .range(10..<1000))
        #expect(ByteRange.parse("bytes=-\(String(repeating: "9", count: 40))", size: 1000) == .range(0..<1000))
        #expect(ByteRange.parse("bytes=\(String(repeating: "9", count: 40))-", size: 1000) == .unsatisfiable)
    }

    // MARK: Trailers

    // Each trailer is followed by another field: http-parser reports a field's end only when
    // the next one starts, which is how the last trailer once escaped being merged.

    @Test func anAuthorizationInTheTrailerIsNotTheRequests() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let answers = try exchange(
            h,
            chunkedHead("POST", "/v1/auth/logout", "Connection: close\r\n")
                + "2\r\n{}\r\n0\r\nAuthorization: Bearer \(alice)\r\nX-Note: 1\r\n\r\n")
        #expect(answers.count == 1 && answers.first?.status == 401)
        // The token still works.
        let again = try await h.request("POST", "/v1/auth/logout", token: alice, json: [String: Any]())
        #expect(again.status == 200)
    }

    @Test func aForwardedForInTheTrailerDoesNotChooseTheClientAddress() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_TRUSTED_PROXIES": "127.0.0.1"])
        defer { h.stop() }
        let seen = Mutex<[String?]>([])
        h.fakes.auth.on(Auth.Login.self) { req, _ in
            seen.withLock { $0.append(req.clientAddress) }
            throw ServiceError.unauthorized("invalid_credentials", "no")
        }
        let body = #"{"login":"alice","password":"secret-password"}"#
        let size = String(body.utf8.count, radix: 16)
        // Through the header, the proxy's word counts (the test can see the address) ...
        let viaHeader = try exchange(
            h,
            chunkedHead("POST", "/v1/auth/login", "X-Forwarded-For: 203.0.113.7\r\nConnection: close\r\n")
                + "\(size)\r\n\(body)\r\n0\r\n\r\n")
        #expect(viaHeader.first?.status == 401)
        // ... through the trailer, it does not.
        let viaTrailer = try exchange(
            h,
            chunkedHead("POST", "/v1/auth/login", "Connection: close\r\n")
                + "\(size)\r\n\(body)\r\n0\r\nX-Forwarded-For: 198.51.100.9\r\nX-Note: 1\r\n\r\n")
        #expect(viaTrailer.first?.status == 401)
        #expect(seen.withLock { $0 } == ["203.0.113.7", "127.0.0.1"])
    }

    // MARK: Chunked framing

    @Test func chunkDataNotFollowedByCRLFIsRefusedAndWhatFollowsIsNeverARequest() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let answers = try exchange(h, chunkedHead("POST", "/v1/auth/logout") + "2\r\n{}XX0\r\n\r\n" + next)
        #expect(answers.count == 1, "the bytes after the bad chunk were answered as a request")
        #expect(answers.first?.status == 400 && answers.first?.text.contains("CRLF") == true)
    }

    @Test func aChunkSizeOverflowIsNamedAsSuch() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let answers = try exchange(h, chunkedHead("POST", "/v1/auth/logout") + "FFFFFFFFFFFFFFFFFFFF\r\n" + next)
        #expect(answers.count == 1 && answers.first?.status == 400)
        let detail = answers.first?.json["detail"] as? String ?? ""
        #expect(detail.contains("chunk size") && !detail.contains("Content-Length"), "\(detail)")
    }

    @Test func everyOtherChunkedFramingErrorIs400AndCloses() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let bodies = [
            "2\r{}\r\n0\r\n\r\n",  // CR without LF after the size
            "2\n{}\r\n0\r\n\r\n",  // bare LF after the size
            "2;a\u{1}\r\n{}\r\n0\r\n\r\n",  // a control character in an extension
            "x\r\n{}\r\n0\r\n\r\n",  // no size
            "2\r\n{}\r\n0\r\n folded: x\r\n\r\n",  // a trailer line starting with a space
            "2\r\n{}\r\n0\r\nno-colon\r\n\r\n",  // a trailer line without a colon
            "2\r\n{}\r\n0\r\n\rX",  // the last CRLF broken
        ]
        for body in bodies {
            let answers = try exchange(h, chunkedHead("POST", "/v1/auth/logout") + body + next)
            #expect(answers.count == 1 && answers.first?.status == 400, "\(body.debugDescription)")
        }
        // Well-formed: extensions, a trailer, and the next request on the same connection.
        let good = try exchange(
            h, chunkedHead("POST", "/v1/auth/logout") + "1;ext=\"v\"\r\n{\r\n01\r\n}\r\n000\r\nX-Note: dropped\r\n\r\n" + next)
        #expect(good.map(\.status) == [401, 200])
    }

    // MARK: Loose edges

    @Test func twoAuthorizationHeadersAreRefused() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let answers = try exchange(
            h,
            "GET /v1/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\n"
                + "Authorization: Bearer other\r\nConnection: close\r\n\r\n")
        #expect(answers.count == 1 && answers.first?.status == 400)
        #expect(answers.first?.text.contains("Authorization") == true)
    }

    /// Two `Content-Type` headers are refused, whichever comes first: which media type counts
    /// would be ambiguous.
    @Test func twoContentTypeHeadersAreRefused() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        for (first, second) in [("application/json", "text/plain"), ("text/plain", "application/json")] {
            let answers = try exchange(
                h,
                "POST /v1/notifications/read HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\n"
                    + "Content-Type: \(first)\r\ncontent-type: \(second)\r\nContent-Length: 2\r\n"
                    + "Connection: close\r\n\r\n{}")
            #expect(answers.count == 1 && answers.first?.status == 400)
            #expect(answers.first?.text.contains("duplicate_header") == true)
        }
    }

    /// An `Authorization` header whose value is empty, or only spaces and tabs, carries no
    /// credentials: 401 `unauthorized`, as without the header (an empty value once crashed the
    /// gateway), and the gateway goes on answering.
    @Test func anEmptyAuthorizationValueIsUnauthorized() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        for value in ["", " \t ", "Bearer", "Bearer \t"] {
            let answers = try exchange(
                h, "GET /v1/me HTTP/1.1\r\nHost: x\r\nAuthorization:\(value)\r\nConnection: close\r\n\r\n")
            #expect(answers.count == 1 && answers.first?.status == 401, "`\(value)`")
            #expect(answers.first?.text.contains("\"unauthorized\"") == true, "`\(value)`")
        }
        let after = try exchange(
            h,
            "GET /v1/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\nConnection: close\r\n\r\n")
        #expect(after.first?.status == 200)
    }

    @Test func aRouteThatTakesNoBodyRefusesMembers() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let likes = Atomic<Int>(0)
        h.fakes.profile.on(Profile.SetLike.self) { req, _ in
            likes.add(1, ordering: .relaxed)
            return .init(liked: req.liked, likeCount: 1)
        }
        let refused = try await h.request("PUT", "/v1/posts/p1/like", token: alice, json: ["liked": false])
        #expect(refused.status == 400 && refused.object["code"] as? String == "unknown_field")
        #expect((refused.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "liked")
        #expect(likes.load(ordering: .relaxed) == 0)
        let empty = try await h.request("PUT", "/v1/posts/p1/like", token: alice)
        #expect(empty.status == 200)
        let emptyObject = try await h.request("PUT", "/v1/posts/p1/like", token: alice, json: [String: Any]())
        #expect(emptyObject.status == 200)
    }

    @Test func absoluteFormTargetsAreAccepted() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        for target in ["http://x/healthz", "HTTP://127.0.0.1:\(h.port)/healthz?probe=1"] {
            let answers = try exchange(h, "GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(answers.first?.status == 200, "\(target)")
        }
    }

    @Test func optionsAsteriskDescribesTheServer() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let answers = try exchange(h, "OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(answers.first?.status == 200)
        let allow = answers.first?.header("Allow") ?? ""
        for method in ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
            #expect(allow.contains(method), "Allow: \(allow)")
        }
        #expect(answers.first?.header("Content-Length") == "0")
        // `*` is only OPTIONS's (RFC 9112 §3.2.4).
        let other = try exchange(h, "GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(other.first?.status == 400)
    }

    @Test func afterConnectOrUpgradeNothingMoreIsRead() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let heads = [
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            "GET /healthz HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n",
        ]
        for head in heads {
            let answers = try exchange(h, head + next)
            #expect(answers.count == 1, "the bytes after \(head.debugDescription) were answered")
        }
    }

    @Test func http10KeepAliveIsKeptAndSaid() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let c = try RawConnection(port: h.port, timeoutSeconds: 30)
        try c.send("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let first = c.readResponses(1).first
        #expect(first?.status == 200 && first?.header("Connection")?.lowercased() == "keep-alive")
        try c.send("GET /healthz HTTP/1.0\r\n\r\n")
        let rest = RawResponse.parseAll(c.readToEnd())
        #expect(rest.count == 1 && rest.first?.status == 200, "the connection was not kept alive")
        #expect(rest.first?.header("Connection")?.lowercased() == "close")
    }
}

extension HTTPFramingTests {
    /// The served OpenAPI document says what the gateway does: its own content type, the 503
    /// code an upload gets when the budget is taken, the slow-upload 408, and 415 on every
    /// route with a JSON body.
    @Test func theOpenAPIDocumentDescribesWhatIsSent() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let served = try await h.request("GET", "/openapi.json")
        let doc = served.object
        let paths = doc["paths"] as? [String: [String: Any]] ?? [:]
        func responses(_ path: String, _ method: String) -> [String: [String: Any]] {
            (paths[path]?[method] as? [String: Any])?["responses"] as? [String: [String: Any]] ?? [:]
        }
        let type = served.header("Content-Type")?.split(separator: ";").first.map(String.init) ?? ""
        let documented = (responses("/openapi.json", "get")["200"]?["content"] as? [String: Any])?.keys.sorted() ?? []
        #expect(documented == [type])
        for (path, method) in [("/v1/media", "post"), ("/v1/me/profile/photo", "put")] {
            let busy = responses(path, method)["503"]?["description"] as? String
            let slow = responses(path, method)["408"]?["description"] as? String
            #expect(busy?.contains("server_busy") == true, "\(method) \(path)")
            #expect(slow?.contains("GATEWAY_UPLOAD_MIN_BYTES_PER_SECOND") == true, "\(method) \(path)")
        }
        var jsonRoutes = 0
        for (path, operations) in paths {
            for (method, value) in operations {
                guard let operation = value as? [String: Any],
                    let body = (operation["requestBody"] as? [String: Any])?["content"] as? [String: Any],
                    body["application/json"] != nil
                else { continue }
                jsonRoutes += 1
                #expect(responses(path, method)["415"] != nil, "\(method) \(path)")
            }
        }
        #expect(jsonRoutes >= 9)
    }
}

extension HTTPFramingTests {
    /// A chunked upload waits for its credentials' check with http-parser paused after its
    /// head; then `ChunkedDecoder` reads its body, however the bytes are split, and the request
    /// after it on the same connection is parsed afresh.
    @Test func aChunkedUploadIsDecodedAfterItsCheckAndTheConnectionGoesOn() throws {
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.maxBodyBytes = 10
        configuration.maxLargeBodyBytesInFlight = 100
        let server = HTTPServer(
            configuration: configuration, logger: Logger(service: "test", minimum: .error),
            responder: TestResponder(maxBodyBytes: { $0 == "/upload" ? 60 : nil }) { request in
                .json(status: 200, bytes: Array(#"{"bodyBytes":\#(request.body.count)}"#.utf8))
            })
        let port = try server.start()
        defer { server.shutdownGracefully() }
        let c = try RawConnection(port: port, timeoutSeconds: 10)
        try c.send(
            "POST /upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nExpect: 100-continue\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n")
        #expect(c.readResponses(1).first?.status == 100)
        for piece in [
            "1", "e\r\n", String(repeating: "a", count: 20), String(repeating: "b", count: 10), "\r", "\n0", "\r\n\r\n",
        ] {
            try c.send(piece)
        }
        let done = c.readResponses(1).first
        #expect(done?.status == 200 && done?.json["bodyBytes"] as? Int == 30)
        #expect(server.largeBodyBytesInFlight == 0)
        try c.send("POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        let next = RawResponse.parseAll(c.readToEnd())
        #expect(next.count == 1 && next.first?.json["bodyBytes"] as? Int == 5)
        // Chunks announcing more than the route's limit: 413 before their data is read.
        let big = try RawConnection(port: port, timeoutSeconds: 10)
        try big.send(
            "POST /upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nTransfer-Encoding: chunked\r\n\r\n3d\r\n")
        #expect(RawResponse.parseAll(big.readToEnd()).first?.status == 413)
    }
}
