import Foundation
import TestSupport
import Testing
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// The real gateway's resource limits (issue 18): the upload budget, streams and connections
/// per client, each with small limits set through the environment.
@Suite struct GatewayBudgetTests {
    /// Sends the head of a 100 MiB video upload with `Expect: 100-continue` and reads the first
    /// answer (100 Continue, or a refusal).
    private func beginUpload(_ h: GatewayHarness, token: String) throws -> (RawConnection, RawResponse?) {
        let c = try RawConnection(port: h.port, timeoutSeconds: 30)
        try c.send(
            "POST /v1/media HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: video/mp4\r\n"
                + "Expect: 100-continue\r\nContent-Length: \(100 << 20)\r\n\r\n")
        return (c, c.readResponses(1).first)
    }

    @Test func uploadsWithMadeUpTokensTakeNoBudget() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        var held: [RawConnection] = []
        for i in 0..<3 {
            let (c, answer) = try beginUpload(h, token: "made-up-token-\(i)")
            #expect(answer?.status == 401 && answer?.json["code"] as? String == "invalid_token")
            held.append(c)
        }
        let (real, answer) = try beginUpload(h, token: alice)
        #expect(answer?.status == 100, "a real upload was kept out by made-up tokens")
        real.shutdownWrite()
        _ = held
    }

    @Test func aTrickleLosesItsShareOfTheUploadBudget() async throws {
        let h = try await GatewayHarness.start([
            "GATEWAY_UPLOAD_MIN_BYTES_PER_SECOND": "1000", "GATEWAY_UPLOAD_RATE_WINDOW_SECONDS": "1",
        ])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let (slow, answer) = try beginUpload(h, token: alice)
        #expect(answer?.status == 100)
        // One byte at a time, far below 1,000 B/s, but never a pause that the read timeout
        // would catch: only the minimum rate ends it. Each wait is for the gateway's answer.
        var answered = false
        for _ in 0..<150 where !answered {
            try slow.send("x")
            var pfd = pollfd(fd: slow.fd, events: Int16(POLLIN), revents: 0)
            answered = poll(&pfd, 1, 200) > 0
        }
        #expect(answered, "the trickle was never stopped")
        let refused = slow.readResponses(1).first
        #expect(refused?.status == 408 && refused?.json["code"] as? String == "request_timeout")
        // Its share is back: another 100 MiB upload from the same address is let in.
        let (next, again) = try beginUpload(h, token: alice)
        #expect(again?.status == 100)
        next.shutdownWrite()
    }

    /// Opens a notification stream and reads its answer's head: the status, and the whole
    /// answer's text when it is not a stream (a refusal closes the connection).
    private func openStream(_ h: GatewayHarness, token: String) throws -> (RawConnection, Int, String) {
        let c = try RawConnection(port: h.port, timeoutSeconds: 30)
        try c.send("GET /v1/notifications/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n")
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: data, as: UTF8.self).contains("\r\n\r\n") {
            let n = recv(c.fd, &buf, buf.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            data += buf[0..<n]
        }
        let status = Int(String(decoding: data, as: UTF8.self).split(separator: " ").dropFirst().first ?? "") ?? 0
        if status != 200 { data += c.readToEnd() }
        return (c, status, String(decoding: data, as: UTF8.self))
    }

    @Test func oneAccountCannotTakeEveryStream() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_MAX_STREAMS_PER_USER": "2"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let bob = h.fakes.addUser("bob")
        let first = try openStream(h, token: alice)
        let second = try openStream(h, token: alice)
        #expect(first.1 == 200 && second.1 == 200)
        let third = try openStream(h, token: alice)
        #expect(third.1 == 429 && third.2.contains("too_many_streams") && third.2.contains("Retry-After"))
        // Another account still gets its stream.
        let other = try openStream(h, token: bob)
        #expect(other.1 == 200)
        // Closing one of alice's makes room for another.
        shutdown(first.0.fd, Int32(SHUT_RDWR))
        var reopened = 0
        for _ in 0..<200 where reopened != 200 {
            reopened = try openStream(h, token: alice).1
        }
        #expect(reopened == 200)
        _ = (second, other)
    }

    @Test func oneAddressCannotTakeEveryStream() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_MAX_STREAMS_PER_ADDRESS": "2"])
        defer { h.stop() }
        let tokens = ["alice", "bob", "carol"].map { h.fakes.addUser($0) }
        let first = try openStream(h, token: tokens[0])
        let second = try openStream(h, token: tokens[1])
        #expect(first.1 == 200 && second.1 == 200)
        let third = try openStream(h, token: tokens[2])
        #expect(third.1 == 429 && third.2.contains("too_many_streams"))
        _ = (first, second)
    }

    @Test func oneAddressCannotTakeEveryConnection() async throws {
        let h = try await GatewayHarness.start([
            "GATEWAY_MAX_CONNECTIONS_PER_ADDRESS": "3", "GATEWAY_FIRST_BYTE_TIMEOUT_SECONDS": "3600",
        ])
        defer { h.stop() }
        // Three connections that never send a byte hold this address's share (one request
        // through the first shows the gateway has accepted them all: they were queued before).
        let held = try (0..<3).map { _ in try RawConnection(port: h.port, timeoutSeconds: 30) }
        let refused = try RawConnection(port: h.port, timeoutSeconds: 30)
        let answer = refused.readResponses(1).first
        #expect(answer?.status == 503 && answer?.json["code"] as? String == "server_busy")
        // Once one goes, a new connection is served.
        shutdown(held[0].fd, Int32(SHUT_RDWR))
        var status = 0
        for _ in 0..<200 where status != 200 {
            let c = try RawConnection(port: h.port, timeoutSeconds: 30)
            try? c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            status = c.readResponses(1).first?.status ?? 0
        }
        #expect(status == 200)
        _ = held
    }

    @Test func aConnectionThatSendsNothingIsClosed() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_FIRST_BYTE_TIMEOUT_SECONDS": "1"])
        defer { h.stop() }
        let silent = try RawConnection(port: h.port, timeoutSeconds: 60)
        var buf = [UInt8](repeating: 0, count: 64)
        var n = recv(silent.fd, &buf, buf.count, 0)
        while n < 0 && errno == EINTR { n = recv(silent.fd, &buf, buf.count, 0) }
        // 0: the gateway closed it (well before the 120 s idle timeout); -1 would be the
        // client's own 60 s read timeout.
        #expect(n == 0)
    }

    @Test func theRequestTimeoutIsSetByTheEnvironment() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_REQUEST_TIMEOUT_SECONDS": "1"])
        defer { h.stop() }
        let c = try RawConnection(port: h.port, timeoutSeconds: 20)
        try c.send("GET /v1/me HTTP/1.1\r\nHost: x\r\n")  // the head never ends
        // 408 from the 1 s timeout; the default 30 s would outlast the client's 20 s read.
        let answer = c.readResponses(1).first
        #expect(answer?.status == 408 && answer?.json["code"] as? String == "request_timeout")
    }

    @Test func aStreamWhoseClientStoppedReadingIsClosed() async throws {
        let h = try await GatewayHarness.start(["GATEWAY_STREAM_WRITE_TIMEOUT_SECONDS": "1"])
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        h.fakes.addUser("bob")
        // A stream that is never read, with a tiny receive buffer.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var size: Int32 = 2048
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(h.port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(rc == 0)
        let request = Array("GET /v1/notifications/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var metrics = ""
        for _ in 0..<500 where !metrics.contains("sse_open_streams 1") {
            metrics = try await h.request("GET", "/metrics").text
        }
        #expect(metrics.contains("sse_open_streams 1"))
        // Far more than the client's receive buffer, far less than the stream's own buffer: the
        // stream never overflows, so only the write timeout can end it.
        try await h.fakes.notifyBurst("alice", from: "bob", count: 200)
        // The stream leaves and its connection closes: only the /metrics request's is left.
        // (Polled under a generous deadline: how soon is the gateway's business, not the test's.)
        let deadline = Timestamp.nowMs() + 60_000
        while Timestamp.nowMs() < deadline {
            metrics = try await h.request("GET", "/metrics").text
            if metrics.contains("sse_open_streams 0") && metrics.contains("http_open_connections 1\n") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(metrics.contains("sse_open_streams 0"))
        #expect(metrics.contains("http_open_connections 1\n"))
    }
}
