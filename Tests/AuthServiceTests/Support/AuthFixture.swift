import Dispatch
import Foundation
import Harness
import Messages
import ServiceKit
import Support
import TestSupport
import Testing
import Transport
import Wire

/// A running AuthService (the real executable, a fresh data directory) and a client to it,
/// for what only a process shows: restarts, crashes, the wire, the files and logs it writes.
///
/// Every wait is bounded and generous (60 s for what normally takes milliseconds): these tests
/// check behaviour, not speed, on shared machines where a busy moment can take seconds.
final class AuthFixture: Sendable {
    let cluster: Cluster
    let context: ZMQContext
    let client: RPCClient
    /// The deadline of every call (hashing argon2id with 19 MiB on a busy machine included).
    static let timeoutMs = 60_000

    private init(cluster: Cluster, context: ZMQContext, client: RPCClient) {
        self.cluster = cluster
        self.context = context
        self.client = client
    }

    /// Starts AuthService with `environment` added and waits until it answers a ping.
    static func start(_ environment: [String: String] = [:]) async throws -> AuthFixture {
        let cluster = Cluster(extraEnvironment: environment)
        try await startAuth(cluster)
        let context = ZMQContext()
        let client = try RPCClient(
            service: "auth", endpoint: try #require(cluster.endpoints["auth"]?["rpc"]), context: context,
            logger: Logger(service: "test", minimum: .error), security: try cluster.security(context: context),
            defaultTimeoutMs: timeoutMs)
        try await waitUntilReachable(client, timeoutMs: Int64(timeoutMs))
        return AuthFixture(cluster: cluster, context: context, client: client)
    }

    /// Starts (or restarts, on the same ports and data directory) the process; bounded, as
    /// `ServiceProcess.start` does not bound its wait for the READY line itself.
    private static func startAuth(_ cluster: Cluster) async throws {
        _ = try await withDeadline("AuthService to print READY") { try await cluster.start("auth") }
    }

    /// The service's RPC and events endpoints.
    var endpoints: (rpc: String, events: String) {
        get throws {
            let fields = try #require(cluster.endpoints["auth"])
            return (try #require(fields["rpc"]), try #require(fields["events"]))
        }
    }

    /// The service's database file.
    var databasePath: String { "\(cluster.dataDirectory)/auth.sqlite" }

    /// Stops the service with SIGTERM (waiting for it to exit, off the cooperative pool).
    func stop() async throws {
        let cluster = self.cluster
        try await withDeadline("AuthService to exit after SIGTERM") { await onThread { cluster.stop("auth") } }
    }

    /// Stops the service with SIGTERM, starts it again and waits until it answers.
    func restart() async throws {
        // Known, not yet explained: about 1 restart in 15 on PostgreSQL, the test's RPC client
        // gets no connection to the new process for a minute although it printed READY (every
        // call "auth is unavailable"; seen in 2 of 8 CI runs, always after this SIGTERM
        // restart). Restarting the service again has the client connect. The tests here are
        // about events, sessions and persistence across a restart, so after 15 s without a
        // connection the service is restarted once more, and the stall is reported on stderr
        // for whoever takes the investigation up (the closing note of 2026-12-03 says what was
        // tried).
        for attempt in 1...3 {
            try await stop()
            try await Self.startAuth(cluster)
            do {
                try await waitUntilReachable(client, timeoutMs: attempt < 3 ? 15_000 : Int64(Self.timeoutMs))
                return
            } catch let error as ServiceError where attempt < 3 && error.status == 503 {
                FileHandle.standardError.write(
                    Data("AuthFixture.restart: no connection 15 s after READY (attempt \(attempt)); restarting again\n".utf8))
            }
        }
    }

    /// Kills the service with SIGKILL (no clean shutdown), starts it again and waits until it answers.
    func crashAndRestart() async throws {
        let cluster = self.cluster
        try await withDeadline("AuthService to die of SIGKILL") { await onThread { cluster.kill("auth") } }
        try await Self.startAuth(cluster)
        try await waitUntilReachable(client, timeoutMs: Int64(Self.timeoutMs))
    }

    @discardableResult
    func register(_ username: String, email: String? = nil, password: String = "correct horse") async throws
        -> Auth.SessionReply
    {
        try await client.call(
            Auth.Register.self, .init(email: email ?? "\(username)@example.com", username: username, password: password))
    }

    @discardableResult
    func login(_ login: String, _ password: String = "correct horse", from address: String? = nil) async throws
        -> Auth.SessionReply
    {
        try await client.call(Auth.Login.self, .init(login: login, password: password, clientAddress: address))
    }

    func validate(_ token: String) async throws -> Auth.Validate.Reply {
        try await client.call(Auth.Validate.self, .init(token: token))
    }

    @discardableResult
    func logout(_ token: String, all: Bool = false) async throws -> Auth.Logout.Reply {
        try await client.call(Auth.Logout.self, .init(token: token, allSessions: all))
    }

    /// The outbox as `ops.replay` serves it to subscribers: (seq, type, envelope bytes).
    func replay() async throws -> [(seq: Int64, type: String, envelope: [UInt8])] {
        let reply = try await client.call(Ops.Replay.self, .init(after: 0, limit: 1_000))
        return try reply.events.map { text in
            let bytes = Array(text.utf8)
            let header = try WireJSON.decode(EventHeader.self, from: bytes)
            return (header.seq, header.type, bytes)
        }
    }

    deinit {
        client.shutdown()
        cluster.stopAll()
    }
}

/// Decodes the body of an event envelope.
func eventBody<E: Event>(_ type: E.Type, _ envelope: [UInt8]) throws -> E {
    try WireJSON.decode(EventEnvelope<E>.self, from: envelope).body
}
