import Foundation
import Shared
import TestSupport
import Testing

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
}
