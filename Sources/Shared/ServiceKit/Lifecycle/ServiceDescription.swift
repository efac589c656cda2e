import Support

/// What names a back-end service on the wire and in the environment, written once: its name
/// (producer name in event envelopes, log `service`, CURVE key file name), the prefix of its
/// environment variables and its default ports on one machine. The service uses it to bind;
/// every client uses it to find the service.
public struct ServiceDescription: Sendable, Hashable, CustomStringConvertible {
    /// `auth`, `profile`, `notification`.
    public let name: String
    /// `AUTH`, `PROFILE`, `NOTIFICATION`: `<PREFIX>_RPC_ENDPOINT`, `<PREFIX>_EVENTS_BIND`, ...
    public let envPrefix: String
    /// The executable's name, e.g. `AuthService`.
    public let executable: String
    /// ROUTER port on one machine.
    public let defaultRPCPort: Int
    /// PUB port on one machine.
    public let defaultEventsPort: Int
    /// Routed-delivery XPUB port on one machine (NotificationService's `TopicPublisher`; nil for
    /// services without one).
    public let defaultDeliveryPort: Int?

    public var description: String { name }

    init(
        name: String, envPrefix: String, executable: String, defaultRPCPort: Int, defaultEventsPort: Int,
        defaultDeliveryPort: Int? = nil
    ) {
        self.name = name
        self.envPrefix = envPrefix
        self.executable = executable
        self.defaultRPCPort = defaultRPCPort
        self.defaultEventsPort = defaultEventsPort
        self.defaultDeliveryPort = defaultDeliveryPort
    }

    public static let auth = ServiceDescription(
        name: "auth", envPrefix: "AUTH", executable: "AuthService", defaultRPCPort: 5551, defaultEventsPort: 5552)
    public static let profile = ServiceDescription(
        name: "profile", envPrefix: "PROFILE", executable: "ProfileService", defaultRPCPort: 5553,
        defaultEventsPort: 5554)
    public static let notification = ServiceDescription(
        name: "notification", envPrefix: "NOTIFICATION", executable: "NotificationService", defaultRPCPort: 5555,
        defaultEventsPort: 5556, defaultDeliveryPort: 5557)
    /// Every back-end service, in start order (each depends only on those before it).
    public static let all = [auth, profile, notification]

    /// Where clients reach the service: `<PREFIX>_RPC_ENDPOINT`, `<PREFIX>_EVENTS_ENDPOINT` and
    /// (with a delivery port) `<PREFIX>_DELIVERY_ENDPOINT`, default `tcp://127.0.0.1:<default port>`.
    public func endpoints(_ env: Environment) -> ServiceEndpoints {
        ServiceEndpoints(
            rpc: env.string("\(envPrefix)_RPC_ENDPOINT", default: "tcp://127.0.0.1:\(defaultRPCPort)"),
            events: env.string("\(envPrefix)_EVENTS_ENDPOINT", default: "tcp://127.0.0.1:\(defaultEventsPort)"),
            delivery: defaultDeliveryPort.map {
                env.string("\(envPrefix)_DELIVERY_ENDPOINT", default: "tcp://127.0.0.1:\($0)")
            })
    }

    /// Where the service binds: `<PREFIX>_RPC_BIND`, `<PREFIX>_EVENTS_BIND` (and
    /// `<PREFIX>_DELIVERY_BIND`), defaulting to the
    /// client endpoints. A port of `*` binds an ephemeral one (printed on the READY line).
    public func binds(_ env: Environment) -> ServiceEndpoints {
        let c = endpoints(env)
        return ServiceEndpoints(
            rpc: env.string("\(envPrefix)_RPC_BIND", default: c.rpc),
            events: env.string("\(envPrefix)_EVENTS_BIND", default: c.events),
            delivery: c.delivery.map { env.string("\(envPrefix)_DELIVERY_BIND", default: $0) })
    }
}

/// A service's ZeroMQ endpoints.
public struct ServiceEndpoints: Sendable, Equatable {
    /// The ROUTER (requests), `tcp://host:port`.
    public var rpc: String
    /// The PUB (events).
    public var events: String
    /// The routed-delivery XPUB (NotificationService only).
    public var delivery: String?

    public init(rpc: String, events: String, delivery: String? = nil) {
        self.rpc = rpc
        self.events = events
        self.delivery = delivery
    }
}
