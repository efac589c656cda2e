import Foundation

/// A configuration value that could not be used, naming the environment variable.
public struct ConfigurationError: Error, CustomStringConvertible {
    public var variable: String
    public var value: String
    public var expected: String
    public var description: String { "invalid \(variable)=\(value): expected \(expected)" }
}

/// Reads configuration from environment variables, each with a working single-machine default.
public struct Environment: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) { self.values = values }

    /// A string, or `defaultValue` when unset or empty.
    public func string(_ name: String, default defaultValue: String) -> String {
        guard let v = values[name], !v.isEmpty else { return defaultValue }
        return v
    }

    /// An optional string (nil when unset or empty).
    public func optionalString(_ name: String) -> String? {
        guard let v = values[name], !v.isEmpty else { return nil }
        return v
    }

    /// An integer within `range`.
    /// - Throws: `ConfigurationError` naming the variable when it is not an integer in range.
    public func int(_ name: String, default defaultValue: Int, range: ClosedRange<Int> = Int.min...Int.max) throws -> Int {
        guard let raw = values[name], !raw.isEmpty else { return defaultValue }
        guard let v = Int(raw), range.contains(v) else {
            throw ConfigurationError(variable: name, value: raw, expected: "an integer in \(range)")
        }
        return v
    }

    /// A boolean (`1/0`, `true/false`, `yes/no`, `on/off`).
    /// - Throws: `ConfigurationError` for anything else.
    public func bool(_ name: String, default defaultValue: Bool) throws -> Bool {
        guard let raw = values[name]?.lowercased(), !raw.isEmpty else { return defaultValue }
        switch raw {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError(variable: name, value: raw, expected: "true or false")
        }
    }

    /// The data directory (`DATA_DIR`, default `./data`), created if missing.
    public func dataDirectory() throws -> String {
        let dir = string("DATA_DIR", default: "./data")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}

/// Default endpoints for one machine. Services bind `*_BIND` (default the same as the endpoint);
/// clients connect to `*_ENDPOINT`. Ports: auth 5551/5552, profile 5553/5554, notification 5555/5556.
public struct ServiceEndpoints: Sendable {
    /// Where the service's ROUTER is reached (`tcp://host:port`).
    public var rpc: String
    /// Where the service's PUB is reached.
    public var events: String

    /// Reads `<PREFIX>_RPC_ENDPOINT` and `<PREFIX>_EVENTS_ENDPOINT` (e.g. `AUTH_RPC_ENDPOINT`).
    public static func client(_ prefix: String, env: Environment, rpcPort: Int, eventsPort: Int) -> ServiceEndpoints {
        ServiceEndpoints(
            rpc: env.string("\(prefix)_RPC_ENDPOINT", default: "tcp://127.0.0.1:\(rpcPort)"),
            events: env.string("\(prefix)_EVENTS_ENDPOINT", default: "tcp://127.0.0.1:\(eventsPort)"))
    }

    /// Reads `<PREFIX>_RPC_BIND` and `<PREFIX>_EVENTS_BIND`, defaulting to the client endpoints.
    /// A port of `*` binds an ephemeral port (the service prints the real one when ready).
    public static func bind(_ prefix: String, env: Environment, rpcPort: Int, eventsPort: Int) -> ServiceEndpoints {
        let c = client(prefix, env: env, rpcPort: rpcPort, eventsPort: eventsPort)
        return ServiceEndpoints(
            rpc: env.string("\(prefix)_RPC_BIND", default: c.rpc),
            events: env.string("\(prefix)_EVENTS_BIND", default: c.events))
    }

    public static func auth(_ env: Environment) -> ServiceEndpoints { client("AUTH", env: env, rpcPort: 5551, eventsPort: 5552) }
    public static func profile(_ env: Environment) -> ServiceEndpoints {
        client("PROFILE", env: env, rpcPort: 5553, eventsPort: 5554)
    }
    public static func notification(_ env: Environment) -> ServiceEndpoints {
        client("NOTIFICATION", env: env, rpcPort: 5555, eventsPort: 5556)
    }
}
