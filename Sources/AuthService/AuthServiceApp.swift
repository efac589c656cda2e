import CSodium
import Foundation
import Shared

/// AuthService's startup: configuration, libsodium, the password hasher, then the standard
/// service host on `AUTH_RPC_BIND` / `AUTH_EVENTS_BIND` (defaults ports 5551 / 5552).
enum AuthServiceApp {
    static func run() async {
        let runtime = ServiceRuntime(name: "auth")
        let configuration: AuthConfiguration
        let hasher: PasswordHasher
        do {
            guard sodium_init() >= 0 else { throw ServiceError.internal("sodium_init failed") }
            configuration = try AuthConfiguration(env: runtime.env)
            hasher = try PasswordHasher(
                concurrency: configuration.hashConcurrency, queueLimit: configuration.hashQueueLimit)
        } catch {
            runtime.logger.error("service.failed", metadata: ["error": "\(error)"])
            exit(1)
        }
        await runtime.runStandard(
            envPrefix: "AUTH", rpcPort: 5551, eventsPort: 5552, migrations: AuthSchema.migrations
        ) {
            host, database in
            AuthHandlers(
                database: database, hasher: hasher, configuration: configuration, logger: runtime.logger
            )
            .install(on: host)
            let purge = SessionPurge(database: database, logger: runtime.logger)
            return [ServiceClosure { await purge.run(intervalSeconds: configuration.sessionPurgeSeconds) }]
        }
    }
}
