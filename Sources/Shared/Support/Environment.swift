import Foundation

/// A configuration value that could not be used, naming the environment variable.
public struct ConfigurationError: Error, CustomStringConvertible {
    package init(variable: String, value: String, expected: String) {
        self.variable = variable
        self.value = value
        self.expected = expected
    }

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
