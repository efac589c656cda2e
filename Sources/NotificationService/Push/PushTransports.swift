import APNs
import Shared

/// Where NotificationService gets its APNs transport from the environment.
enum PushTransports {
    /// The transport for `env`, or nil (push off, said once at start).
    ///
    /// PLUG IN THE REAL TRANSPORT HERE: when `APNsClient` lands (branch push-apns), return
    /// `APNsClient(configuration)` for `APNsConfiguration.fromEnvironment()` when it gives a
    /// configuration (`APNS_KEY_FILE`, `APNS_KEY_ID`, `APNS_TEAM_ID`, `APNS_TOPIC`, `APNS_URL`,
    /// `APNS_CA_FILE`), and nil (with this log line) when they are unset. Until then push is off.
    static func make(env: Environment, logger: Logger) throws -> (any PushTransport)? {
        logger.info("push is off: APNS_* unset")
        return nil
    }
}
