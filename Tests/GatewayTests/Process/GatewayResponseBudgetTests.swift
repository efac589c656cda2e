import Foundation
import TestSupport
import Testing
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// The real gateway serving media (issue 18): the response budget against readers that stop
/// reading, and bodies that stay whole when chunk reads fail for a while.
@Suite struct GatewayResponseBudgetTests {
    /// Bytes whose every position differs from its neighbours (a short body cannot pass as whole).
    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) } }

    /// A client socket from `source` (a loopback address) with a tiny receive buffer, which it
    /// will not read beyond a response's head.
    private func slowReader(port: Int, from source: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size: Int32 = 2048
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, connected == 0 else {
            close(fd)
            throw RawConnection.RawError(message: "cannot connect from \(source): errno \(errno)")
        }
        return fd
    }

    /// Reads a response's head one byte at a time (nothing of the body): its text.
    private func readHead(_ fd: Int32) -> String {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            let n = recv(fd, &byte, 1, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            head.append(byte)
        }
        return String(decoding: head, as: UTF8.self)
    }

    private func gauge(_ metrics: String, _ name: String) -> Int? {
        metrics.split(separator: "\n").first { $0.hasPrefix("\(name) ") }.flatMap { Int($0.split(separator: " ")[1]) }
    }

    @Test func readersThatStopReadingHoldNoMoreThanTheBudget() async throws {
        let budget = 4 << 20
        let share = 2 << 20
        let h = try await GatewayHarness.start([
            "GATEWAY_RESPONSE_BUFFER_BYTES": "\(budget)", "GATEWAY_RESPONSE_BUFFER_BYTES_PER_ADDRESS": "\(share)",
        ])
        defer { h.stop() }
        let video = Self.pattern(8 << 20)
        let id = h.fakes.addMedia(video)
        // Twelve readers at one address ask for 8 MiB each and never read past the head: each
        // would hold a 1 MiB chunk. The address's share has room for two; the others are told
        // to come back before any head is sent.
        var slow: [Int32] = []
        defer { for fd in slow { close(fd) } }
        var statuses: [Int] = []
        for _ in 0..<12 {
            let fd = try slowReader(port: h.port, from: "127.0.0.2")
            slow.append(fd)
            let request = Array("GET /media/\(id)/original HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            let head = readHead(fd)
            let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
            statuses.append(status)
            if status == 503 { #expect(head.contains("Retry-After: ")) }
        }
        #expect(statuses.filter { $0 == 200 }.count == share >> 20, "\(statuses)")
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(statuses)")
        // Another client still gets the whole video, and health checks their answer.
        let whole = try await h.request("GET", "/media/\(id)/original")
        #expect(whole.status == 200 && whole.body == video)
        #expect(try await h.request("GET", "/healthz").status == 200)
        let metrics = try await h.request("GET", "/metrics").text
        let peak = try #require(gauge(metrics, "http_response_buffer_peak_bytes"))
        #expect(peak <= budget + 64 * 1024, "peak \(peak)")
        // The readers leave (a close with unread bytes resets): what they held is given back.
        for fd in slow { close(fd) }
        slow = []
        var held: Int? = -1
        let deadline = Timestamp.nowMs() + 60_000
        while Timestamp.nowMs() < deadline {
            held = gauge(try await h.request("GET", "/metrics").text, "http_response_buffer_bytes")
            if held == 0 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(held == 0)
    }

    /// GET over a raw connection that closes after the answer: the answers read until the close.
    private func getOnce(_ h: GatewayHarness, _ path: String) throws -> (RawResponse?, Int) {
        let c = try RawConnection(port: h.port, timeoutSeconds: 60)
        try c.send("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let data = c.readToEnd()
        return (RawResponse.parseAll(data).first, data.count)
    }

    @Test func aBodyWhoseChunkReadsFailForAWhileArrivesWhole() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let video = Self.pattern((3 << 20) + 5)
        let id = h.fakes.addMedia(video)
        // The second chunk's first three reads fail (ProfileService restarting mid-body).
        h.fakes.failChunkReads(3, from: 1 << 20)
        let (answer, received) = try getOnce(h, "/media/\(id)/original")
        let response = try #require(answer, "a 200 closed short after \(received) bytes")
        #expect(response.status == 200 && response.body == video)
    }

    @Test func aBodyThatCannotStartIsA503NotAShort200() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let id = h.fakes.addMedia(Self.pattern(2 << 20))
        h.fakes.failChunkReads(-1)
        let (answer, received) = try getOnce(h, "/media/\(id)/original")
        let response = try #require(answer, "no whole answer; \(received) bytes before the close")
        #expect(response.status == 503)
        #expect(response.header("Retry-After") != nil)
        #expect(response.json["code"] as? String == "service_unavailable")
    }
}
