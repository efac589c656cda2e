import Foundation
import Testing

@testable import BackendKit
@testable import ServiceKit
@testable import Support
@testable import Transport
@testable import Wire

/// CURVE between a host and its clients: authorised keys pass, unknown keys and plain text are refused.
struct CurveSecurityTests {
    let logger = Logger(service: "test", minimum: .error)

    @Test func onlyAuthorisedClientsGetThrough() async throws {
        let dir = makeDir()
        let keys = "\(dir)/keys"
        // The server is "test" (the host's name used by clients to find its key); one authorised client.
        try CurveSecurity.writeKeyPair(directory: keys, name: "test")
        try CurveSecurity.writeKeyPair(directory: keys, name: "client")
        try CurveSecurity.writeKeyPair(directory: "\(dir)/other", name: "intruder")
        try FileManager.default.copyItem(atPath: "\(keys)/test.pub", toPath: "\(dir)/other/test.pub")

        let serverContext = ZMQContext()
        let serverSecurity = try CurveSecurity.fromEnvironment(
            Environment(["CURVE_ENABLED": "1", "CURVE_SECRET_KEY_FILE": "\(keys)/test.key", "CURVE_PUBLIC_KEYS_DIR": keys]),
            context: serverContext, logger: logger)
        let host = ServiceHost(
            name: "test", context: serverContext, rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*", database: nil,
            logger: logger, security: serverSecurity)
        host.on(TestRPC.Echo.self) { request, _ in .init(text: request.text) }
        let endpoint = try host.start().rpc
        defer { host.stop() }

        // Authorised: traffic flows.
        let clientContext = ZMQContext()
        let clientSecurity = try CurveSecurity.fromEnvironment(
            Environment(["CURVE_ENABLED": "1", "CURVE_SECRET_KEY_FILE": "\(keys)/client.key", "CURVE_PUBLIC_KEYS_DIR": keys]),
            context: clientContext, logger: logger)
        let good = try RPCClient(
            service: "test", endpoint: endpoint, context: clientContext, logger: logger, security: clientSecurity)
        defer { good.shutdown() }
        try await waitUntilConnected(good)
        #expect(try await good.call(TestRPC.Echo.self, .init(text: "secret"), timeoutMs: 10_000).text == "secret")

        // A key the server does not know: the handshake is refused, so nothing can be sent.
        let intruderContext = ZMQContext()
        let intruderSecurity = try CurveSecurity.fromEnvironment(
            Environment([
                "CURVE_ENABLED": "1", "CURVE_SECRET_KEY_FILE": "\(dir)/other/intruder.key",
                "CURVE_PUBLIC_KEYS_DIR": "\(dir)/other",
            ]), context: intruderContext, logger: logger)
        let intruder = try RPCClient(
            service: "test", endpoint: endpoint, context: intruderContext, logger: logger, security: intruderSecurity,
            unsentRetryBudgetMs: 1_500)
        defer { intruder.shutdown() }
        await expectRefused(intruder)

        // Plain text (no CURVE at all): refused too.
        let plain = try RPCClient(
            service: "test", endpoint: endpoint, context: ZMQContext(), logger: logger, security: .plain,
            unsentRetryBudgetMs: 1_500)
        defer { plain.shutdown() }
        await expectRefused(plain)
        #expect(!intruder.isConnected && !plain.isConnected)
    }

    func expectRefused(_ client: RPCClient) async {
        do {
            _ = try await client.call(TestRPC.Echo.self, .init(text: "let me in"), timeoutMs: 3_000)
            Issue.record("a refused client got a reply")
        } catch let e as ServiceError {
            #expect(e.code == "service_unavailable")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    func makeDir() -> String {
        let dir = NSTemporaryDirectory() + "curve-\(RandomID.make())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}
