import Foundation
import Harness
import Support
import Testing
import Wire

@testable import Gateway

/// The loop's connection deadlines (`EventLoop+Timeouts.swift`): each connection is looked at
/// when its next deadline comes, not on every tick, and a state whose deadline comes sooner
/// than the look already scheduled moves that look earlier.
@Suite struct HTTPServerDeadlineTests {
    private func server(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in }) throws -> (HTTPServer, Int) {
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configure(&configuration)
        let server = HTTPServer(
            configuration: configuration, logger: Logger(service: "test", minimum: .error),
            handler: { _ in .json(status: 200, bytes: Array(#"{"ok":true}"#.utf8)) })
        return (server, try server.start())
    }

    /// A server whose every answer is `body`, with a 1 s request (and write) timeout.
    private func server(answering body: [UInt8]) throws -> (HTTPServer, Int) {
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.requestTimeoutSeconds = 1
        let server = HTTPServer(
            configuration: configuration, logger: Logger(service: "test", minimum: .error),
            handler: { _ in .json(status: 200, bytes: body) })
        return (server, try server.start())
    }

    /// Reads until the connection ends, pausing `pauseMs` after each read: the bytes received
    /// and how it ended (0 for a clean end, else the errno, `ECONNRESET` for a reset).
    private func readToEnd(_ c: RawConnection, pauseMs: Int = 0) async throws -> (received: Int, end: Int32) {
        var buf = [UInt8](repeating: 0, count: 65_536)
        var received = 0
        while true {
            let n = recv(c.fd, &buf, buf.count, 0)
            if n > 0 {
                received += n
                if pauseMs > 0 { try await Task.sleep(for: .milliseconds(pauseMs)) }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            return (received, n < 0 ? errno : 0)
        }
    }

    private func get(_ c: RawConnection) throws -> Int? {
        try c.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        return c.readResponses(1).first?.status
    }

    @Test func idleConnectionsAreNotLookedAtOnEveryTick() async throws {
        let (server, port) = try server()
        defer { server.shutdownGracefully() }
        // Forty kept-alive connections, each answered once: idle, with nothing due for 10 s
        // (the first-byte look) and 120 s (the idle timeout).
        let idle = try (0..<40).map { _ in try RawConnection(port: port, timeoutSeconds: 30) }
        for c in idle { #expect(try get(c) == 200) }
        let before = server.connectionChecks
        // Time passes (the condition itself, not a guess at how long something takes): a loop
        // that looked at every connection once a second would take at least 80 looks here.
        let start = Timestamp.nowMs()
        let active = try RawConnection(port: port, timeoutSeconds: 30)
        while Timestamp.nowMs() - start < 2_500 {
            #expect(try get(active) == 200)
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(server.connectionChecks - before < 10, "\(server.connectionChecks - before) looks at idle connections")
        _ = idle
    }

    @Test func aStreamIsWatchedOnlyWhileBytesMayWaitForItsClient() async throws {
        let streams = Locked<[EventStream]>([])
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.idleTimeoutSeconds = 3_600
        configuration.firstByteTimeoutSeconds = 3_600
        let server = HTTPServer(
            configuration: configuration, logger: Logger(service: "test", minimum: .error),
            handler: { _ in
                let stream = EventStream()
                streams.withLock { $0.append(stream) }
                var response = HTTPResponse(status: 200, headers: [("Content-Type", "text/event-stream")])
                response.body = .stream(stream)
                return response
            })
        let port = try server.start()
        defer { server.shutdownGracefully() }
        let clients = try (0..<40).map { _ in try RawConnection(port: port, timeoutSeconds: 30) }
        for c in clients { try c.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n") }
        while streams.withLock({ $0.count }) < clients.count { try await Task.sleep(for: .milliseconds(10)) }
        for stream in streams.withLock({ $0 }) { #expect(stream.append(Array("data: x\n\n".utf8))) }
        // Each client reads its head and event: every stream has everything acknowledged, so the
        // look a second after the write finds nothing waiting and stops watching it.
        for c in clients {
            var seen: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 1024)
            while !String(decoding: seen, as: UTF8.self).contains("data: x") {
                let n = recv(c.fd, &buf, buf.count, 0)
                if n <= 0 { break }
                seen += buf[0..<n]
            }
        }
        while server.connectionChecks < clients.count { try await Task.sleep(for: .milliseconds(20)) }
        let watched = server.connectionChecks
        // Time passes: a loop looking at each stream every second (or every few) would look
        // dozens of times; an idle stream is not looked at.
        let start = Timestamp.nowMs()
        while Timestamp.nowMs() - start < 2_500 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(server.connectionChecks - watched < 5, "\(server.connectionChecks - watched) looks at idle streams")
        // A new event watches its stream again, and it is delivered.
        #expect(streams.withLock { $0[0] }.append(Array("data: y\n\n".utf8)))
        var buf = [UInt8](repeating: 0, count: 1024)
        let n = recv(clients[0].fd, &buf, buf.count, 0)
        #expect(n > 0 && String(decoding: buf[0..<max(0, n)], as: UTF8.self).contains("data: y"))
    }

    @Test func anIdleConnectionIsStillClosedAtItsTimeout() throws {
        let (server, port) = try server { $0.idleTimeoutSeconds = 1 }
        defer { server.shutdownGracefully() }
        let c = try RawConnection(port: port, timeoutSeconds: 60)
        #expect(try get(c) == 200)
        // Closed by the gateway (0 bytes, end of stream), not the client's 60 s read timeout.
        #expect(c.readToEnd().isEmpty)
        #expect(server.connectionChecks >= 1)
    }

    @Test func aRequestStartedOnAnIdleConnectionIsTimedFromItsStart() async throws {
        // Nothing is due on the connection for an hour when the request begins: its 1 s
        // request timeout must move the connection's look earlier.
        let (server, port) = try server {
            $0.idleTimeoutSeconds = 3_600
            $0.firstByteTimeoutSeconds = 3_600
            $0.requestTimeoutSeconds = 1
        }
        defer { server.shutdownGracefully() }
        let c = try RawConnection(port: port, timeoutSeconds: 60)
        #expect(try get(c) == 200)
        // The answer's write deadline (1 s) comes up and finds the connection idle: its next
        // look is then the idle timeout's, an hour away.
        while server.connectionChecks == 0 { try await Task.sleep(for: .milliseconds(20)) }
        try c.send("GET /x HTTP/1.1\r\nHost: x\r\n")  // never finished
        let answer = c.readResponses(1).first
        #expect(answer?.status == 408 && answer?.json["code"] as? String == "request_timeout")
    }
    @Test func anAnswerItsClientStoppedReadingEndsWithAReset() async throws {
        // 64 MiB: more than the kernel buffers of both ends hold, so the write stalls.
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 64 << 20)
        let (server, port) = try server(answering: body)
        defer { server.shutdownGracefully() }
        let c = try RawConnection(port: port, timeoutSeconds: 30)
        try c.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        // The client reads nothing until the gateway has given up on the write.
        while server.openConnections == 0 { try await Task.sleep(for: .milliseconds(20)) }
        while server.openConnections > 0 { try await Task.sleep(for: .milliseconds(20)) }
        let (received, end) = try await readToEnd(c)
        // A close would have let the orphaned socket deliver what it queued, then end cleanly.
        #expect(end == ECONNRESET, "ended with errno \(end) after \(received) bytes")
        #expect(received < body.count)
    }
    @Test func aClientThatReadsSlowlyKeepsItsAnswer() async throws {
        // 6 MiB, more than the kernel queues at once; read at about 640 KB/s, so the gateway
        // finds room for its next write only seconds after the last: more than the 1 s timeout.
        let body = [UInt8](repeating: UInt8(ascii: "x"), count: 6 << 20)
        let (server, port) = try server(answering: body)
        defer { server.shutdownGracefully() }
        let c = try RawConnection(port: port, timeoutSeconds: 30)
        try c.send("GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        // 100 ms between reads: the client's pace, not a wait for the server.
        let (received, end) = try await readToEnd(c, pauseMs: 100)
        #expect(end == 0, "ended with errno \(end) after \(received) bytes")
        #expect(received > body.count)  // the head and the whole body
    }
}
