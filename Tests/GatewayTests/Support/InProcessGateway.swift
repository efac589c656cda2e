import Foundation
import Messages
import Support
import Wire

@testable import Gateway

/// The gateway built in process on fake services (`buildApplication` with `FakeService`s
/// through `GatewayBackends`), asked requests without sockets (`GatewayApplication.respond`): a
/// controller test registers what the services answer, sends a request, and checks the answer
/// and the calls the services received.
///
/// AuthService answers `auth.validate` for the tokens `signIn` gave out; every other RPC needs a
/// handler from the test (an RPC without one is answered 502, as a service that does not know it).
final class InProcessGateway: Sendable {
    let auth = FakeService("auth")
    let profile = FakeService("profile")
    let notification = FakeService("notification")
    let app: GatewayApplication
    private let sessions = Locked<[String: Auth.Validate.Reply]>([:])

    private struct Backends: GatewayBackends {
        let auth: any ServiceBackend
        let profile: any ServiceBackend
        let notification: any ServiceBackend
    }

    init(_ configure: (inout GatewayConfiguration) -> Void = { _ in }) {
        var configuration = GatewayConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configure(&configuration)
        app = buildApplication(
            configuration, backends: Backends(auth: auth, profile: profile, notification: notification),
            logger: Logger(service: "gateway", minimum: .error))
        let sessions = self.sessions
        auth.on(Auth.Validate.self) { request, _ in
            guard let session = sessions.withLock({ $0[request.token] }) else {
                throw ServiceError.unauthorized(.invalidToken, "unknown token")
            }
            return session
        }
    }

    /// A session for `username` (user id `u-<username>`, session id `s-<username>`), with the
    /// moderator role when `moderator`.
    /// - Returns: its bearer token.
    @discardableResult
    func signIn(_ username: String, moderator: Bool = false) -> String {
        let token = "tok-\(username)"
        sessions.withLock {
            $0[token] = Auth.Validate.Reply(
                userId: "u-\(username)", sessionId: "s-\(username)", username: username, expiresAt: "2999-01-01T00:00:00.000Z",
                moderator: moderator)
        }
        return token
    }

    /// Sends a request as the HTTP server would hand it over.
    /// - Parameters:
    ///   - target: the path, with its query.
    ///   - token: a bearer token for `Authorization`.
    ///   - json: the body, sent as `application/json` unless `headers` names a `content-type`.
    ///   - headers: more header fields (names in lower case, as the server gives them).
    func request(
        _ method: HTTPMethod, _ target: String, token: String? = nil, json: String? = nil, body: [UInt8]? = nil,
        headers: [(String, String)] = [], peer: String = "127.0.0.1"
    ) async -> TestResponse {
        var fields = headers.map { (name: $0.0, value: $0.1) }
        if let token { fields.append(("authorization", "Bearer \(token)")) }
        if json != nil, !fields.contains(where: { $0.name == "content-type" }) {
            fields.append(("content-type", "application/json"))
        }
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let request = HTTPRequest(
            method: method, path: String(parts[0]), rawQuery: parts.count > 1 ? String(parts[1]) : nil,
            headers: HTTPHeaders(fields: fields), body: body ?? Array((json ?? "").utf8), peerAddress: peer)
        return TestResponse(await app.respond(to: request))
    }
}

/// A response as a test reads it: status, headers, and the body when complete (an event stream
/// or a body produced chunk by chunk is left in `response`).
struct TestResponse: Sendable {
    let response: HTTPResponse

    init(_ response: HTTPResponse) { self.response = response }

    var status: Int { response.status }
    /// The first value of a header, by case-insensitive name.
    func header(_ name: String) -> String? { response.headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    /// The body's bytes (empty unless complete).
    var bytes: [UInt8] {
        if case .bytes(let bytes) = response.body { return bytes }
        return []
    }
    var text: String { String(decoding: bytes, as: UTF8.self) }
    /// The body parsed (JSON `null` when it is not JSON).
    var json: JSONValue { (try? JSONParser.parse(bytes)) ?? .null }
    /// A member of the body's top-level object.
    subscript(_ name: String) -> JSONValue? {
        if case .object(let object) = json { return object[name] }
        return nil
    }
    /// A problem's `code`.
    var code: String? {
        if case .string(let code)? = self["code"] { return code }
        return nil
    }
    /// A problem's `errors[].field`, in order.
    var fields: [String] { errorMembers("field") }
    /// A problem's `errors[].code`, in order.
    var fieldCodes: [String] { errorMembers("code") }

    private func errorMembers(_ name: String) -> [String] {
        guard case .array(let errors)? = self["errors"] else { return [] }
        return errors.compactMap {
            guard case .object(let e) = $0, case .string(let value)? = e[name] else { return nil }
            return value
        }
    }
}
