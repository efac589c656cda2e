import Foundation
import Harness
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
            name: "test", context: serverContext, logger: logger)
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
            name: "client", context: clientContext, logger: logger)
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
            ]), name: "intruder", context: intruderContext, logger: logger)
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

    /// With nothing configured but `DATA_DIR`, CURVE is on: the stack's key pairs are made on
    /// first start under `DATA_DIR/curve` (mode 0700; secret keys 0600), once however many
    /// processes start together, and a key made later (a tool's) is authorised when it first
    /// connects.
    @Test func byDefaultTheStacksKeysAreMadeUnderTheDataDirectoryOnce() async throws {
        let data = makeDir()
        let env = Environment(["DATA_DIR": data])
        // Four processes' first starts at once: each pair is made once.
        let contexts = (0..<4).map { _ in ZMQContext() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, name) in CurveSecurity.stackNames.enumerated() {
                let context = contexts[i]
                group.addTask {
                    _ = try CurveSecurity.fromEnvironment(env, name: name, context: context, logger: Logger(service: name))
                }
            }
            try await group.waitForAll()
        }
        let keys = "\(data)/curve"
        let files = FileManager.default
        #expect(try files.attributesOfItem(atPath: keys)[.posixPermissions] as? Int == 0o700)
        for name in CurveSecurity.stackNames {
            #expect(try files.attributesOfItem(atPath: "\(keys)/\(name).key")[.posixPermissions] as? Int == 0o600)
            let secret = try CurveSecurity.readKey("\(keys)/\(name).key")
            #expect(try CurveSecurity.publicKey(forSecret: secret) == CurveSecurity.readKey("\(keys)/public/\(name).pub"))
        }
        #expect(try files.contentsOfDirectory(atPath: keys).filter { $0.hasSuffix(".key") }.count == 4)

        // The auth process serves; a tool whose key is made after the server started gets through.
        let serverSecurity = try CurveSecurity.fromEnvironment(env, name: "auth", context: contexts[0], logger: logger)
        let host = ServiceHost(
            name: "auth", context: contexts[0], rpcBind: "tcp://127.0.0.1:*", eventsBind: "tcp://127.0.0.1:*",
            database: nil, logger: logger, security: serverSecurity)
        host.on(TestRPC.Echo.self) { request, _ in .init(text: request.text) }
        let endpoint = try host.start().rpc
        defer { host.stop() }
        let toolContext = ZMQContext()
        let tool = try RPCClient(
            service: "auth", endpoint: endpoint, context: toolContext, logger: logger,
            security: try CurveSecurity.security(keysDirectory: keys, name: "loadtest", context: toolContext, logger: logger))
        defer { tool.shutdown() }
        try await waitUntilConnected(tool)
        #expect(try await tool.call(TestRPC.Echo.self, .init(text: "tool"), timeoutMs: 10_000).text == "tool")
        // CURVE_ENABLED=false is the only way to plain text, and a server with CURVE refuses it.
        let off = try CurveSecurity.fromEnvironment(
            Environment(["DATA_DIR": data, "CURVE_ENABLED": "false"]), name: "auth", context: ZMQContext(), logger: logger)
        let plain = try RPCClient(
            service: "auth", endpoint: endpoint, context: ZMQContext(), logger: logger, security: off,
            unsentRetryBudgetMs: 1_500)
        defer { plain.shutdown() }
        await expectRefused(plain)
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
