import Foundation
import Shared

/// The Gateway executable: `Gateway` serves the HTTP API; `Gateway --print-routes` prints every
/// route as `METHOD /path/{param}` and exits.
let runtime = ServiceRuntime(name: "gateway")
do {
    let config = try GatewayConfig(runtime.env)
    let gateway = try Gateway(config: config, runtime: runtime)
    if CommandLine.arguments.contains("--print-routes") {
        for line in gateway.routeLines { print(line) }
        exit(0)
    }
    let server = HTTPServer(
        configuration: .init(
            host: config.host, port: config.port, connectionLimit: config.maxConnections,
            connectionTimeoutSeconds: config.connectionTimeoutSeconds),
        logger: runtime.logger,
        onRefused: { method, _, status in
            gateway.metrics.recordRequest(route: "refused", method: method, status: status, seconds: 0)
        },
        handler: { request in await gateway.handle(request) })
    let files = raiseOpenFileLimit(to: config.maxConnections + 1_024)
    let port = try server.start()
    runtime.logger.info(
        "gateway.listening", metadata: ["host": config.host, "port": "\(port)", "files": "\(files)"])
    let http = ServiceClosure {
        // Ready once the event subscribers know where they start (bounded), so nothing created
        // after the ready line is missed by live streams.
        await gateway.waitForSubscribers(timeoutMs: 3_000)
        runtime.announceReady(["port": "\(port)"])
        // Runs until cancelled (SIGTERM/SIGINT), then closes streams and stops the daemon.
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3_600)) }
        gateway.hub.closeAll()
        server.stop()
    }
    try await ServiceGroup(
        services: [http] + gateway.backgroundServices(runtime), logger: runtime.logger
    ).run()
    runtime.context.shutdown()
    runtime.logger.info("service.stopped")
    exit(0)
} catch {
    runtime.logger.error("service.failed", metadata: ["error": "\(error)"])
    exit(1)
}
