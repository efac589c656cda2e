import Foundation

/// How to reach APNs with token-based authentication, read from the environment.
///
/// The variables (all but `APNS_CA_FILE` and `APNS_CONNECTIONS` required once any is set):
///
/// | variable | field |
/// |---|---|
/// | `APNS_KEY_FILE` | ``keyFile``: the `.p8` signing key downloaded from the developer account |
/// | `APNS_KEY_ID` | ``keyID``: the key's 10-character identifier (the JWT's `kid`) |
/// | `APNS_TEAM_ID` | ``teamID``: the 10-character team identifier (the JWT's `iss`) |
/// | `APNS_TOPIC` | ``topic``: the app's bundle id (`apns-topic`) |
/// | `APNS_URL` | ``baseURL``: `https://api.sandbox.push.apple.com` or `https://api.push.apple.com` |
/// | `APNS_CA_FILE` | ``caFile``: a PEM bundle to trust instead of the system's |
/// | `APNS_CONNECTIONS` | ``connections``: the pool size, 1 to 16 (default 2) |
///
/// `APNS_URL` has no default on purpose: a sandbox token sent to production (or the reverse) is
/// answered 400 `BadDeviceToken`, which removes the device.
///
/// Source: Apple, "Establishing a token-based connection to APNs" and "Sending notification
/// requests to APNs" (developer.apple.com).
public struct APNsConfiguration: Sendable, Equatable {
    /// Path of the `.p8` file: a PEM PKCS#8 EC P-256 private key.
    public var keyFile: String
    /// The key identifier, the JWT header's `kid` (letters and digits).
    public var keyID: String
    /// The team identifier, the JWT claim `iss` (letters and digits).
    public var teamID: String
    /// The `apns-topic` header: the app's bundle id.
    public var topic: String
    /// The server, scheme and host (and port), without a trailing slash, e.g.
    /// `https://api.sandbox.push.apple.com`.
    public var baseURL: String
    /// A PEM file of CA certificates to verify the server with (libcurl's `CURLOPT_CAINFO`);
    /// nil: the system's bundle. Apple's servers chain to the USERTrust RSA root.
    public var caFile: String?
    /// How many HTTP/2 connections the client keeps open at most; each carries many streams.
    public var connections: Int
    /// How long one request may take, connecting included, in seconds; a request that takes
    /// longer ends with `.retry`.
    public var requestTimeout: Double

    /// The default pool size: two long-lived connections.
    public static let defaultConnections = 2

    /// Creates a configuration; see each property for its meaning and units.
    public init(
        keyFile: String, keyID: String, teamID: String, topic: String, baseURL: String, caFile: String? = nil,
        connections: Int = APNsConfiguration.defaultConnections, requestTimeout: Double = 30
    ) {
        self.keyFile = keyFile
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.caFile = caFile
        self.connections = connections
        self.requestTimeout = requestTimeout
    }

    /// The variables this configuration is read from.
    public static let variables = [
        "APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC", "APNS_URL", "APNS_CA_FILE", "APNS_CONNECTIONS",
    ]

    /// Reads the configuration from `environment` (empty values count as unset) and checks it,
    /// loading the key once.
    /// - Returns: nil when none of the `APNS_*` variables is set: push is off.
    /// - Throws: ``APNsConfigurationError`` naming the variable when some are set and a required
    ///   one is missing, a value is malformed, or the key file cannot be read or is not an EC
    ///   P-256 private key.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(APNsConfigurationError) -> APNsConfiguration? {
        func value(_ name: String) -> String? {
            guard let v = environment[name], !v.isEmpty else { return nil }
            return v
        }
        guard variables.contains(where: { value($0) != nil }) else { return nil }
        func required(_ name: String) throws(APNsConfigurationError) -> String {
            guard let v = value(name) else {
                let set = variables.filter { value($0) != nil }
                let missing = ["APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC", "APNS_URL"]
                    .filter { value($0) == nil }
                throw APNsConfigurationError(
                    variable: name,
                    message: "is not set, but \(set.joined(separator: ", ")) \(set.count == 1 ? "is" : "are") "
                        + "(missing: \(missing.joined(separator: ", "))): set all of APNS_KEY_FILE, APNS_KEY_ID, "
                        + "APNS_TEAM_ID, APNS_TOPIC and APNS_URL, or no APNS_* variable at all (push off)")
            }
            return v
        }
        var connections = defaultConnections
        if let text = value("APNS_CONNECTIONS") {
            guard let n = Int(text), (1...16).contains(n) else {
                throw APNsConfigurationError(variable: "APNS_CONNECTIONS", message: "must be 1 to 16, not \(text)")
            }
            connections = n
        }
        let configuration = APNsConfiguration(
            keyFile: try required("APNS_KEY_FILE"), keyID: try required("APNS_KEY_ID"),
            teamID: try required("APNS_TEAM_ID"), topic: try required("APNS_TOPIC"), baseURL: try required("APNS_URL"),
            caFile: value("APNS_CA_FILE"), connections: connections)
        try configuration.validate()
        return configuration
    }

    /// Checks every field and that the key loads.
    /// - Throws: ``APNsConfigurationError`` naming the variable at fault.
    public func validate() throws(APNsConfigurationError) {
        for (name, text) in [("APNS_KEY_ID", keyID), ("APNS_TEAM_ID", teamID)] {
            guard !text.isEmpty, text.utf8.count <= 64, text.unicodeScalars.allSatisfy({ $0.isASCIILetterOrDigit }) else {
                throw APNsConfigurationError(variable: name, message: "must be letters and digits (Apple's are 10), not \(text)")
            }
        }
        guard !topic.isEmpty, topic.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else {
            throw APNsConfigurationError(variable: "APNS_TOPIC", message: "must be the app's bundle id, not \(topic)")
        }
        guard baseURL.hasPrefix("https://"), baseURL.count > 8,
            baseURL.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f })
        else {
            throw APNsConfigurationError(
                variable: "APNS_URL",
                message: "must be an https URL such as https://api.sandbox.push.apple.com, not \(baseURL)")
        }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw APNsConfigurationError(variable: "APNS_CA_FILE", message: "cannot read \(caFile)")
        }
        guard (1...16).contains(connections) else {
            throw APNsConfigurationError(variable: "APNS_CONNECTIONS", message: "must be 1 to 16, not \(connections)")
        }
        guard requestTimeout > 0 else {
            throw APNsConfigurationError(variable: "requestTimeout", message: "must be positive, not \(requestTimeout)")
        }
        _ = try loadKey()
    }

    /// Loads ``keyFile``.
    /// - Throws: ``APNsConfigurationError`` for `APNS_KEY_FILE`.
    func loadKey() throws(APNsConfigurationError) -> ES256Key {
        do {
            return try ES256Key(pemFile: keyFile)
        } catch {
            throw APNsConfigurationError(variable: "APNS_KEY_FILE", message: "\(keyFile): \(error)")
        }
    }
}

/// A bad APNs configuration: which variable, and what is wrong with it.
public struct APNsConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The environment variable at fault, e.g. `APNS_KEY_FILE`.
    public var variable: String
    /// What is wrong, in words.
    public var message: String

    /// Creates an error for `variable`.
    public init(variable: String, message: String) {
        self.variable = variable
        self.message = message
    }

    /// The variable and what is wrong, e.g. `APNS_KEY_ID is not set, but …`.
    public var description: String { "\(variable) \(message)" }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetterOrDigit: Bool {
        (value >= 0x30 && value <= 0x39) || (value >= 0x41 && value <= 0x5a) || (value >= 0x61 && value <= 0x7a)
    }
}
