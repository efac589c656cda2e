import Foundation
import Messages
import ServiceKit
import Support
import Transport
import Wire

/// The gateway executable: its configuration from the environment, its back ends over ZeroMQ
/// (`ServiceBackends`), the application built from both (`buildApplication`), and its run until
/// SIGTERM/SIGINT, announcing readiness once the HTTP server listens and AuthService's events are
/// followed.
enum GatewayApp {
    /// - Returns: the exit status (0 clean stop, 1 failure, 2 bad configuration).
    static func run() async -> Int32 {
        if let status = KeygenCommand.run() { return status }
        let runtime: ServiceRuntime
        let configuration: GatewayConfiguration
        do {
            runtime = try ServiceRuntime(name: "gateway")
            configuration = try GatewayConfiguration(runtime.env, fileLimit: raiseOpenFileLimit())
        } catch {
            Logger(service: "gateway").error("config.invalid", metadata: ["error": "\(error)"])
            return 2
        }
        let logger = runtime.logger
        do {
            let backends = try ServiceBackends(runtime: runtime, configuration: configuration)
            let app = buildApplication(configuration, backends: backends, logger: logger)
            if CommandLine.arguments.contains("--print-routes") {
                for route in app.routeList { print(route) }
                return 0
            }
            let port = try app.start()
            logger.info("gateway.listening", metadata: ["host": configuration.host, "port": "\(port)"])
            let ready = ServiceClosure {
                // Ready once the auth subscriber knows where it starts (bounded), so a logout after
                // the ready line closes the session's streams.
                await backends.waitUntilStarted(timeoutMs: 3_000)
                runtime.announceReady(["port": "\(port)"])
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3_600)) }
            }
            try await app.run(with: [("ready", ready)], logger: logger)
            runtime.context.shutdown()
            logger.info("service.stopped")
            return 0
        } catch {
            logger.error("service.failed", metadata: ["error": "\(error)"])
            return 1
        }
    }
}
