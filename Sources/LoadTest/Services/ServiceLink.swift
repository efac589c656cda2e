import Foundation
import Harness
import ServiceKit
import Support

/// LoadTest's ZeroMQ side, for what setup does through the services rather than the public
/// HTTP API (the bulk imports): RPC clients to AuthService, ProfileService and
/// NotificationService at the endpoints the services' own clients use (`AUTH_RPC_ENDPOINT`,
/// `PROFILE_RPC_ENDPOINT`, `NOTIFICATION_RPC_ENDPOINT`; default `tcp://127.0.0.1:5551/5553/5555`),
/// with CURVE from the same environment as theirs (`CURVE_ENABLED`, `CURVE_SECRET_KEY_FILE`,
/// `CURVE_PUBLIC_KEYS_DIR`: LoadTest needs a key pair whose public key the services authorise).
final class ServiceLink: Sendable {
    let runtime: ServiceRuntime
    let auth: RPCClient
    let profile: RPCClient
    let notification: RPCClient

    /// Connects (in the background) and waits until each service answers `ops.ping`.
    /// - Parameter overrides: variables that take precedence over the process environment.
    /// - Throws: `ConfigurationError` for a bad CURVE setting, `ZMQError` for a bad endpoint,
    ///   `LoadTestError` naming a service that does not answer within `timeoutMs`.
    init(overrides: [String: String] = [:], timeoutMs: Int64 = 15_000) async throws {
        let env = Environment(ProcessInfo.processInfo.environment.merging(overrides) { $1 })
        runtime = try ServiceRuntime(name: "loadtest", env: env)
        auth = try runtime.client(for: .auth)
        profile = try runtime.client(for: .profile)
        notification = try runtime.client(for: .notification)
        for (service, client) in [(ServiceDescription.auth, auth), (.profile, profile), (.notification, notification)] {
            do { try await waitUntilReachable(client, timeoutMs: timeoutMs) } catch {
                shutdown()
                throw LoadTestError(
                    "\(service.executable) at \(client.endpoint) does not answer (\(error)); set \(service.envPrefix)_RPC_ENDPOINT"
                )
            }
        }
    }

    /// Stops the clients' socket threads.
    func shutdown() {
        for client in [auth, profile, notification] { client.shutdown() }
    }
}
