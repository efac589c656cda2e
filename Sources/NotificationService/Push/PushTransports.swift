import APNs
import Support

/// Where NotificationService gets its APNs transport from the environment.
enum PushTransports {
    /// The APNs HTTP/2 client for `env` (`APNsConfiguration.fromEnvironment`: `APNS_KEY_FILE`,
    /// `APNS_KEY_ID`, `APNS_TEAM_ID`, `APNS_TOPIC`, `APNS_URL`, `APNS_CA_FILE`,
    /// `APNS_CONNECTIONS`), or nil when none of them is set: push is off, and the service says so
    /// once, at start.
    /// - Throws: `APNsConfigurationError` naming the variable when some are set but the
    ///   configuration is incomplete or its key does not load (the service does not start).
    /// - Returns: the transport and the device environments it reaches
    ///   (`PushQueue.environments(forURL:)` of `APNS_URL`).
    static func make(env: Environment, logger: Logger) throws -> (
        transport: any PushTransport, environments: Set<String>
    )? {
        guard let configuration = try APNsConfiguration.fromEnvironment(env.values) else {
            logger.info("push is off: APNS_* unset")
            return nil
        }
        let environments = PushQueue.environments(forURL: configuration.baseURL)
        logger.info(
            "push is on",
            metadata: [
                "url": configuration.baseURL, "topic": configuration.topic, "keyID": configuration.keyID,
                "connections": "\(configuration.connections)",
                "environments": environments.sorted().joined(separator: ","),
            ])
        return (try APNsClient(configuration: configuration), environments)
    }
}
