import Foundation
import Harness
import Messages
import ServiceKit
import Support
import Wire

/// LoadTest's ZeroMQ side, for what setup does through the services rather than the public
/// HTTP API (the bulk imports): RPC clients to AuthService, ProfileService and
/// NotificationService at the endpoints the services' own clients use (`AUTH_RPC_ENDPOINT`,
/// `PROFILE_RPC_ENDPOINT`, `NOTIFICATION_RPC_ENDPOINT`; default `tcp://127.0.0.1:5551/5553/5555`),
/// with CURVE from the same environment as theirs: by default the stack's keys under
/// `DATA_DIR/curve` (the same `DATA_DIR` as the stack's: `./data` for `scripts/run-local`),
/// where LoadTest makes a key pair of its own (`loadtest`) that the services authorise when it
/// first connects; with `CURVE_SECRET_KEY_FILE` and `CURVE_PUBLIC_KEYS_DIR`, a pair handed in
/// as files (deploy/: its public key must be among the services').
final class ServiceLink: Sendable {
    let runtime: ServiceRuntime
    let auth: RPCClient
    let profile: RPCClient
    let notification: RPCClient

    /// Connects (in the background), waits until each service answers `ops.ping`, and checks
    /// that the stack serves the bulk imports.
    /// - Parameter overrides: variables that take precedence over the process environment.
    /// - Throws: `ConfigurationError` for a bad CURVE setting, `ZMQError` for a bad endpoint,
    ///   `LoadTestError` naming a service that does not answer within `timeoutMs`,
    ///   `ImportsRefused` when the stack does not serve imports.
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
        // Imports are off unless the stack allows them; an empty batch asks without changing
        // anything (400 invalid_request when they are served).
        do {
            _ = try await auth.call(Auth.ImportSessions.self, .init(userIds: []), timeoutMs: Int(timeoutMs))
        } catch let error as ServiceError where error.errorCode == .importsDisabled {
            shutdown()
            throw ImportsRefused()
        } catch let error as ServiceError where error.status == 400 {}
    }

    /// The stack does not serve the bulk imports; the message says how to ask for them.
    struct ImportsRefused: Error, CustomStringConvertible {
        var description: String {
            "the stack refuses the bulk imports (403 imports_disabled): start it with scripts/run-local "
                + "--allow-imports (ALLOW_IMPORTS=1 for the services) for a setup in seconds"
        }
    }

    /// Stops the clients' socket threads.
    func shutdown() {
        for client in [auth, profile, notification] { client.shutdown() }
    }
}
