import Foundation
import Shared
import TestSupport
import Testing

/// A running AuthService (real executable, fresh data directory) and a client to it.
final class AuthFixture: Sendable {
    let cluster: Cluster
    let context: ZMQContext
    let client: RPCClient
    /// Generous deadline for calls that hash a password (argon2id, 19 MiB) on a busy machine.
    static let hashTimeoutMs = 20_000

    private init(cluster: Cluster, context: ZMQContext, client: RPCClient) {
        self.cluster = cluster
        self.context = context
        self.client = client
    }

    /// Starts AuthService with `environment` added and waits until it answers a ping.
    static func start(_ environment: [String: String] = [:]) async throws -> AuthFixture {
        let cluster = Cluster(extraEnvironment: environment)
        try await cluster.start(["auth"])
        let context = ZMQContext()
        let client = try cluster.client("auth", context: context)
        try await waitUntilReachable(client)
        return AuthFixture(cluster: cluster, context: context, client: client)
    }

    /// Stops and starts the service on the same ports and data directory, then waits for it.
    func restart() async throws {
        cluster.stop("auth")
        try await cluster.start("auth")
        try await waitUntilReachable(client)
    }

    /// Registers `username` with `email` (default `<username>@example.com`).
    @discardableResult
    func register(_ username: String, email: String? = nil, password: String = "correct horse")
        async throws
        -> Auth.SessionReply
    {
        try await client.call(
            Auth.Register.self,
            .init(email: email ?? "\(username)@example.com", username: username, password: password),
            timeoutMs: Self.hashTimeoutMs)
    }

    func login(_ login: String, _ password: String = "correct horse") async throws
        -> Auth.SessionReply
    {
        try await client.call(
            Auth.Login.self, .init(login: login, password: password), timeoutMs: Self.hashTimeoutMs)
    }

    func validate(_ token: String) async throws -> Auth.Validate.Reply {
        try await client.call(Auth.Validate.self, .init(token: token))
    }

    func logout(_ token: String, all: Bool = false) async throws -> Auth.Logout.Reply {
        try await client.call(Auth.Logout.self, .init(token: token, allSessions: all))
    }

    deinit {
        client.shutdown()
        cluster.stopAll()
    }
}

/// Runs `body`, expecting a `ServiceError` with `code` and `status`; returns it for more checks.
@discardableResult
func expectError(
    _ code: String, status: Int, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> ServiceError? {
    do {
        try await body()
        Issue.record("expected \(status) \(code), got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as ServiceError {
        #expect(error.code == code, sourceLocation: sourceLocation)
        #expect(error.status == status, sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected ServiceError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
