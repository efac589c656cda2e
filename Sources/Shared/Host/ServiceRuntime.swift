import Foundation

/// What every service executable starts with: environment, logger, ZeroMQ context, and the
/// line it prints on stdout when ready (`READY {"service": ..., "rpc": ..., "events": ...}`),
/// which tests and scripts wait for instead of sleeping.
public struct ServiceRuntime: Sendable {
    public let name: String
    public let env: Environment
    public let logger: Logger
    public let context: ZMQContext
    public let security: TransportSecurity

    /// Reads the environment; with `CURVE_ENABLED` it loads the keys and starts the ZAP handler
    /// (see `CurveSecurity`). Handles the `keygen <dir> <name>` command line and exits after it.
    /// Exits with status 2 and a message naming the variable when the configuration is bad.
    public init(name: String, env: Environment = Environment()) {
        self.name = name
        self.env = env
        let logger = Logger(service: name)
        self.logger = logger
        self.context = ZMQContext()
        let args = CommandLine.arguments
        if args.count >= 2 && args[1] == "keygen" {
            guard args.count == 4 else {
                print("usage: \(args[0]) keygen <directory> <name>   (writes <name>.key and <name>.pub)")
                exit(2)
            }
            do {
                try CurveSecurity.writeKeyPair(directory: args[2], name: args[3])
                print("wrote \(args[2])/\(args[3]).key and \(args[2])/\(args[3]).pub")
                exit(0)
            } catch {
                print("keygen failed: \(error)")
                exit(1)
            }
        }
        do {
            self.security = try CurveSecurity.fromEnvironment(env, context: context, logger: logger)
        } catch {
            logger.error("config.invalid", metadata: ["error": "\(error)"])
            exit(2)
        }
        TransportSecurity.current = security
    }

    /// Prints the ready line with the endpoints actually bound.
    public func announceReady(_ fields: [String: String]) {
        var all = fields
        all["service"] = name
        let json = (try? WireJSON.encode(all)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        let line = Array("READY \(json)\n".utf8)
        line.withUnsafeBytes { _ = write(1, $0.baseAddress, $0.count) }
    }

    /// An RPC client to another service.
    public func client(_ service: String, _ endpoints: ServiceEndpoints) throws -> RPCClient {
        try RPCClient(service: service, endpoint: endpoints.rpc, context: context, logger: logger, security: security)
    }

    /// Runs a standard service: opens `<DATA_DIR>/<name>.sqlite` with `migrations`, hosts it on
    /// `<PREFIX>_RPC_BIND` / `<PREFIX>_EVENTS_BIND`, lets `setup` register handlers and return
    /// extra services (subscribers), prints the ready line, and runs until SIGTERM/SIGINT.
    /// Exits the process with status 1 on a startup error.
    public func runStandard(
        envPrefix: String, rpcPort: Int, eventsPort: Int, migrations: [String],
        setup: (ServiceHost, Database) throws -> [any Service]
    ) async {
        do {
            let dir = try env.dataDirectory()
            let database = try Database(path: "\(dir)/\(name).sqlite", producer: name, migrations: migrations)
            let bind = ServiceEndpoints.bind(envPrefix, env: env, rpcPort: rpcPort, eventsPort: eventsPort)
            let host = ServiceHost(
                name: name, context: context, rpcBind: bind.rpc, eventsBind: bind.events, database: database, logger: logger,
                security: security)
            let extra = try setup(host, database)
            let bound = try host.start()
            announceReady(["rpc": bound.rpc, "events": bound.events])
            let group = ServiceGroup(services: [ServiceClosure { await host.run() }] + extra, logger: logger)
            try await group.run()
            context.shutdown()
            logger.info("service.stopped")
        } catch {
            logger.error("service.failed", metadata: ["error": "\(error)"])
            exit(1)
        }
    }
}
