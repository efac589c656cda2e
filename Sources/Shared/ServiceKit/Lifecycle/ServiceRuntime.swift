import Foundation
import Messages
import Support
import Transport
import Wire

/// What every executable starts with: environment, logger, ZeroMQ context and transport
/// security, and the line it prints on stdout when ready (`READY {"service": ..., "rpc": ...,
/// "events": ...}`), which tests and scripts wait for instead of sleeping.
public struct ServiceRuntime: Sendable {
    public let name: String
    public let env: Environment
    public let logger: Logger
    public let context: ZMQContext
    public let security: TransportSecurity

    /// Reads the environment, loads (on first start, makes) the CURVE keys and starts the ZAP
    /// handler (see `CurveSecurity`; `CURVE_ENABLED=false` turns it off).
    /// - Throws: `ConfigurationError` naming the variable or file that is wrong.
    public init(name: String, env: Environment = Environment()) throws {
        self.name = name
        self.env = env
        let logger = Logger(service: name)
        self.logger = logger
        UnknownWireValues.log(with: logger)
        self.context = ZMQContext()
        self.security = try CurveSecurity.fromEnvironment(env, name: name, context: context, logger: logger)
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

    /// An RPC client to another service, at its configured endpoint.
    /// - Throws: `ZMQError` when the endpoint is invalid.
    public func client(for service: ServiceDescription) throws -> RPCClient {
        try RPCClient(
            service: service.name, endpoint: service.endpoints(env).rpc, context: context, logger: logger,
            security: security)
    }
}

/// The `keygen <dir> <name>` command every executable answers (see `CurveSecurity`).
public enum KeygenCommand {
    /// Runs the command if `arguments` ask for it.
    /// - Returns: nil when the arguments are not a keygen command; else the exit status
    ///   (0 written, 1 failed, 2 usage), after printing what happened.
    public static func run(_ arguments: [String] = CommandLine.arguments) -> Int32? {
        guard arguments.count >= 2, arguments[1] == "keygen" else { return nil }
        guard arguments.count == 4 else {
            print("usage: \(arguments[0]) keygen <directory> <name>   (writes <name>.key and <name>.pub)")
            return 2
        }
        do {
            try CurveSecurity.writeKeyPair(directory: arguments[2], name: arguments[3])
            print("wrote \(arguments[2])/\(arguments[3]).key and \(arguments[2])/\(arguments[3]).pub")
            return 0
        } catch {
            print("keygen failed: \(error)")
            return 1
        }
    }
}
