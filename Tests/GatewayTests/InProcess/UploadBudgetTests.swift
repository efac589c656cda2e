import Foundation
import Support
import Testing

@testable import Gateway

/// The budget for bodies larger than the default limit (uploads): reserved from the declared length
/// when the headers arrive, refused with 503 before the body is read when it would go over, given
/// back when the handler returns or the connection ends; one peer address may hold only its share,
/// and an upload without credentials takes none.
@Suite struct UploadBudgetTests {
    final class Server: Sendable {
        let server: HTTPServer
        let port: Int

        init(perPeer: Int = 100, sharedPeers: Set<String> = []) throws {
            var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
            configuration.maxBodyBytes = 10
            configuration.maxLargeBodyBytesInFlight = 100
            configuration.maxLargeBodyBytesPerPeer = perPeer
            configuration.sharedPeers = sharedPeers
            let handler: @Sendable (HTTPRequest) async -> HTTPResponse = { request in
                .json(status: 200, bytes: Array(#"{"bodyBytes":\#(request.body.count)}"#.utf8))
            }
            server = HTTPServer(
                configuration: configuration, logger: Logger(service: "test", minimum: .error),
                responder: TestResponder(maxBodyBytes: { $0 == "/upload" ? 1_000 : nil }, handler: handler))
            port = try server.start()
        }

        deinit { server.shutdownGracefully() }

        /// Sends an upload's head with `Expect: 100-continue` and waits for the interim answer, so
        /// the server has reserved (or refused) its bytes when this returns.
        func begin(_ length: Int, authorization: String? = "Bearer t") throws -> (RawConnection, RawResponse?) {
            let c = try RawConnection(port: port, timeoutSeconds: 10)
            let credentials = authorization.map { "Authorization: \($0)\r\n" } ?? ""
            try c.send(
                "POST /upload HTTP/1.1\r\nHost: x\r\n\(credentials)Expect: 100-continue\r\nContent-Length: \(length)\r\n\r\n")
            return (c, c.readResponses(1).first)
        }
    }

    @Test func uploadsOverTheBudgetWaitTheirTurn() throws {
        let s = try Server()
        let (first, continueFirst) = try s.begin(80)
        #expect(continueFirst?.status == 100)
        #expect(s.server.largeBodyBytesInFlight == 80)

        let (second, refused) = try s.begin(50)
        #expect(refused?.status == 503 && refused?.json["code"] as? String == "server_busy")
        #expect(refused?.header("Retry-After") == "1")
        second.shutdownWrite()

        try first.send(String(repeating: "x", count: 80))
        let done = first.readResponses(1).first
        #expect(done?.status == 200 && done?.json["bodyBytes"] as? Int == 80)
        #expect(s.server.largeBodyBytesInFlight == 0)

        let (third, continueThird) = try s.begin(50)
        #expect(continueThird?.status == 100)
        try third.send(String(repeating: "y", count: 50))
        #expect(third.readResponses(1).first?.status == 200)
        // Small bodies never touch the budget.
        let small = try RawConnection(port: s.port, timeoutSeconds: 10)
        try small.send("POST /other HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        #expect(small.readResponses(1).first?.status == 200)
    }

    @Test func anAbandonedUploadGivesItsBytesBack() throws {
        let s = try Server()
        let (c, interim) = try s.begin(90)
        #expect(interim?.status == 100 && s.server.largeBodyBytesInFlight == 90)
        try c.send("partial")
        c.shutdownWrite()  // the client gives up: the server closes the connection
        _ = c.readToEnd()
        let (next, accepted) = try s.begin(90)
        #expect(accepted?.status == 100, "the abandoned upload's bytes were not given back")
        try next.send(String(repeating: "z", count: 90))
        #expect(next.readResponses(1).first?.status == 200)
    }

    /// Without an `Authorization: Bearer` header an upload is answered 401 before it reserves any
    /// bytes (every upload route needs credentials; clients without any held the whole budget).
    @Test func anUploadWithoutCredentialsTakesNone() throws {
        let s = try Server()
        for authorization in [nil, "Basic dTpw", "Bearer "] as [String?] {
            let (c, answer) = try s.begin(90, authorization: authorization)
            #expect(answer?.status == 401 && answer?.header("WWW-Authenticate") == "Bearer", "\(authorization ?? "none")")
            #expect(s.server.largeBodyBytesInFlight == 0)
            c.shutdownWrite()
        }
        let (c, accepted) = try s.begin(90)
        #expect(accepted?.status == 100)
        try c.send(String(repeating: "a", count: 90))
        #expect(c.readResponses(1).first?.status == 200)
    }

    /// One peer address holds at most its share; a trusted proxy's address (many clients) is not
    /// limited.
    @Test func onePeerHoldsOnlyItsShare() throws {
        let s = try Server(perPeer: 60)
        let (first, ok) = try s.begin(50)
        #expect(ok?.status == 100)
        let (second, refused) = try s.begin(20)
        #expect(refused?.status == 503 && s.server.largeBodyBytesInFlight == 50)
        second.shutdownWrite()
        first.shutdownWrite()
        _ = first.readToEnd()

        let proxied = try Server(perPeer: 60, sharedPeers: ["127.0.0.1"])
        let (a, okA) = try proxied.begin(50)
        let (b, okB) = try proxied.begin(40)
        #expect(okA?.status == 100 && okB?.status == 100 && proxied.server.largeBodyBytesInFlight == 90)
        a.shutdownWrite()
        b.shutdownWrite()
    }
}
