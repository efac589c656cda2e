import Messages
import Support
import Wire

/// Whether a service serves the bulk imports (`auth.import_users`, `auth.import_sessions`,
/// `notification.import_follows`, `notification.import_devices`): accounts with a chosen
/// password hash, sessions without a password, silent follow edges and devices. They exist for
/// a load test's setup and are refused unless the operator allows them (`ALLOW_IMPORTS`, default
/// false; `scripts/run-local --allow-imports` sets it): behind CURVE only the stack's own
/// processes can ask, but a deployment has no use for them at all.
public struct Imports: Sendable {
    /// Whether imports are served.
    public let allowed: Bool

    /// - Parameter allowed: whether imports are served.
    public init(allowed: Bool) { self.allowed = allowed }

    /// `ALLOW_IMPORTS` (default false); said at start when on.
    /// - Throws: `ConfigurationError` when it is not a boolean.
    public init(env: Environment, logger: Logger) throws {
        allowed = try env.bool("ALLOW_IMPORTS", default: false)
        if allowed { logger.warning("imports.allowed", metadata: ["setting": "ALLOW_IMPORTS"]) }
    }

    /// Throws the refusal of `type` (an RPC type) unless imports are allowed.
    /// - Throws: 403 `imports_disabled`, naming the setting.
    public func check(_ type: String) throws {
        guard allowed else {
            throw ServiceError(
                .importsDisabled,
                message: "\(type) is off: this service serves imports only with ALLOW_IMPORTS=1 (a load test's setup)",
                status: 403)
        }
    }
}
