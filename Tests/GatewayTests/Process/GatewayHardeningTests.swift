import Foundation
import Messages
import TestSupport
import Testing
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// The hostile-client classes of issue 11 through the real Gateway executable (fake services
/// behind it): paths, methods, HEAD, JSON bodies, metrics labels, and streams whose clients
/// go away at any moment.
@Suite struct GatewayHardeningTests {
    @Test func escapedSlashesNulsAndBadEscapesInAPathAreRefusedNotRouted() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        for path in ["/v1/users/al%2Fice", "/v1/users/al%00ice", "/v1/users/al%zzice", "/v1/me%2Fprofile%2Fedit"] {
            let r = try await h.request("GET", path, token: alice)
            #expect([400, 404].contains(r.status), "\(path): \(r.status)")
            #expect(r.header("content-type") == "application/problem+json", "\(path)")
        }
        // A decoded segment is the parameter, whole.
        #expect(try await h.request("GET", "/v1/users/al%69ce", token: alice).status == 200)
    }

    @Test func aWrongMethodIs405WithAllow() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let r = try await h.request("DELETE", "/healthz")
        #expect(r.status == 405)
        #expect(r.header("allow") == "GET, HEAD")
        #expect(r.header("content-type") == "application/problem+json")
        let unknown = try await h.request("GET", "/nowhere")
        #expect(unknown.status == 404 && unknown.header("content-type") == "application/problem+json")
        // A method the HTTP parser does not know is answered the same way, never with a 5xx.
        for method in ["QUERY", "FROB"] {
            let c = try RawConnection(port: h.port)
            try c.send("\(method) /v1/me HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = RawResponse.parseAll(c.readToEnd()).first
            #expect(r?.status == 405 && r?.header("Allow") == "DELETE, GET, HEAD", "\(method)")
            #expect(r?.header("Content-Type") == "application/problem+json")
        }
    }

    @Test func headAnswersAsGetWould() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let get = try await h.request("GET", "/openapi.json")
        let c = try RawConnection(port: h.port)
        try c.send("HEAD /openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let head = String(decoding: c.readToEnd(), as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200 "))
        #expect(head.contains("Content-Length: \(get.body.count)\r\n"))
        #expect(head.hasSuffix("\r\n\r\n"))
    }

    @Test func jsonBodiesNameTheOffendingMember() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let headers = ["Content-Type": "application/json"]
        let duplicate = try await h.request(
            "POST", "/v1/notifications/read", token: alice, raw: Array(#"{"upToSeq":1,"upToSeq":2}"#.utf8), headers: headers)
        #expect(duplicate.status == 400 && duplicate.object["code"] as? String == "malformed_json")
        #expect((duplicate.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "upToSeq")
        var details = Set<String>()
        for n in ["1e400", "99999999999999999999999999999999", "-5", "2.5"] {
            let r = try await h.request(
                "POST", "/v1/notifications/read", token: alice, raw: Array(#"{"upToSeq":\#(n)}"#.utf8), headers: headers)
            #expect(r.status == 400 && r.object["code"] as? String == "invalid_field", "\(n): \(r.text)")
            #expect((r.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "upToSeq")
            details.insert(r.object["detail"] as? String ?? "")
        }
        #expect(details.count == 1)
    }

    @Test func clientsCannotShapeTheMetrics() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        for (method, path) in [
            ("PROPFIND", "/x"), ("GET", "/secret%22path%0Aevil"), ("GET", "/v1/users/al%2Fice"), ("MKCOL", "/v1/me"),
        ] {
            let c = try RawConnection(port: h.port)
            try c.send("\(method) \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            _ = c.readToEnd()
        }
        let c = try RawConnection(port: h.port)
        try c.send("FROB /x HTTP/1.1\r\nHost: x\r\n\r\n")  // a method http-parser does not know: 501
        _ = c.readToEnd()
        let metrics = try await h.request("GET", "/metrics").text
        let routes = Set(
            metrics.split(separator: "\n").filter { $0.hasPrefix("http_requests_total{") }.compactMap { line -> String? in
                guard let start = line.range(of: "route=\"")?.upperBound, let end = line[start...].firstIndex(of: "\"")
                else { return nil }
                return String(line[start..<end])
            })
        #expect(routes.allSatisfy { $0 == "unmatched" || $0.hasPrefix("/") && !$0.contains("secret") })
        #expect(!metrics.contains("PROPFIND") && !metrics.contains("MKCOL") && !metrics.contains("FROB"))
        #expect(metrics.contains(#"method="other""#))
        #expect(!metrics.contains("evil"))
    }

    /// Reads the gateway's resident memory (kB) from /proc.
    private func residentKB(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    private func openStreams(_ h: GatewayHarness) async throws -> Int {
        let text = try await h.request("GET", "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix("sse_open_streams ") } ?? ""
        return Int(line.split(separator: " ").last ?? "-1") ?? -1
    }

    /// Polls `sse_open_streams` until it is `expected` (60 s at most).
    private func waitForOpenStreams(_ h: GatewayHarness, _ expected: Int) async throws -> Int {
        let deadline = Timestamp.nowMs() + 60_000
        var count = try await openStreams(h)
        while count != expected && Timestamp.nowMs() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            count = try await openStreams(h)
        }
        return count
    }

    /// 300 clients that connect and close without reading — before the first byte, after the
    /// headers, or during a replay — leave no stream registered and the gateway's memory flat.
    @Test func streamsWhoseClientsWentAwayAreUnregistered() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        try await h.fakes.notifyBurst("alice", from: "bob", count: 500)  // a backlog to replay
        let pid = try #require(h.process.pid)
        func round(_ n: Int) async throws {
            for i in 0..<n {
                let c = try RawConnection(port: h.port)
                let resume = i % 3 == 2 ? "Last-Event-ID: 0\r\n" : ""
                try c.send("GET /v1/notifications/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\n\(resume)\r\n")
                if i % 3 == 1 {
                    // after the response has begun
                    var buf = [UInt8](repeating: 0, count: 64)
                    _ = recv(c.fd, &buf, buf.count, 0)
                }
                // i % 3 == 0: before the first byte; i % 3 == 2: during the replay
            }
        }
        try await round(300)
        #expect(try await waitForOpenStreams(h, 0) == 0)
        let warm = residentKB(pid)
        for _ in 0..<3 { try await round(300) }
        #expect(try await waitForOpenStreams(h, 0) == 0)
        let after = residentKB(pid)
        // Flat: 900 more short-lived streams leave no per-stream memory behind (allocator noise
        // allowed, not 900 × a buffer).
        #expect(after - warm < 8_192, "RSS grew from \(warm) kB to \(after) kB")
        // And the gateway still serves.
        #expect(try await h.request("GET", "/v1/notifications", token: alice).status == 200)
    }

    /// HEAD on the stream route answers the stream's head and no body, and holds no stream.
    @Test func headOnTheStreamOpensNoStream() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let c = try RawConnection(port: h.port)
        try c.send("HEAD /v1/notifications/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\n\r\n")
        let raw = c.readToEnd()  // the gateway closes the connection after the head
        let text = String(decoding: raw, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.lowercased().contains("content-type: text/event-stream"), "\(text)")
        #expect(text.hasSuffix("\r\n\r\n") && !text.contains(": connected"), "a body after the head: \(text)")
        #expect(try await waitForOpenStreams(h, 0) == 0)
    }
}
