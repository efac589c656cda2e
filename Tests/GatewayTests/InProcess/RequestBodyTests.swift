import Foundation
import Support
import Testing

@testable import Gateway

/// A body is parsed once: the dispatcher's parse (made to check it) is what the handler reads.
struct RequestBodyTests {
    func request(body: String, parsed: JSONBody?) -> Request {
        let http = HTTPRequest(
            method: .post, path: "/v1/x", rawQuery: nil, headers: HTTPHeaders(fields: [("content-type", "application/json")]),
            body: Array(body.utf8), peerAddress: "127.0.0.1")
        return Request(
            http: http, parameters: Parameters(values: [:]), query: try! Query(nil), session: nil, clientAddress: "127.0.0.1",
            trace: "t", route: "/v1/x", baseLogger: Logger(service: "test", minimum: .error), parsedBody: parsed)
    }

    @Test func theHandlerReadsTheDispatchersParse() throws {
        let http = HTTPRequest(
            method: .post, path: "/v1/x", rawQuery: nil, headers: HTTPHeaders(fields: [("content-type", "application/json")]),
            body: Array(#"{"a":1}"#.utf8), peerAddress: "127.0.0.1")
        let parsed = try JSONBody(http)
        struct Body: Decodable { var a: Int }
        // The bytes are not read again: a body that would not parse still gives the parse made.
        #expect(try request(body: "not json", parsed: parsed).decode(Body.self).a == 1)
        #expect(throws: Problem.self) { try request(body: "not json", parsed: nil).decode(Body.self) }
    }
}
