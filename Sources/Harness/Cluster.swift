import Foundation
import Messages
import ServiceKit
import Support
import Transport
import Wire

/// The backend services started as real processes on ephemeral loopback ports, with a fresh
/// `DATA_DIR`. Start order follows the dependencies: auth, profile, notification, then gateway.
public final class Cluster: @unchecked Sendable {
    // @unchecked: mutated only by the test that owns it, from one task at a time.
    public let dataDirectory: String
    public private(set) var processes: [String: ServiceProcess] = [:]
    /// Endpoints by service: `["auth": ["rpc": ..., "events": ...], "notification": [..., "delivery":
    /// ...], "gateway": ["port": ...]]`.
    public private(set) var endpoints: [String: [String: String]] = [:]
    public let extraEnvironment: [String: String]
    /// Commands services are started through, by service (see `ServiceProcess.launcher`).
    public var launchers: [String: [String]] = [:]
    /// Environment for one service only, by service (`notification`; its replicas too), added
    /// over `extraEnvironment`: e.g. the `APNS_*` variables of a stand-in APNs.
    public var serviceEnvironment: [String: [String: String]] = [:]

    /// - Parameter extraEnvironment: every process's, over `inherited`.
    public init(dataDirectory: String = makeTemporaryDirectory(), extraEnvironment: [String: String] = [:]) {
        self.dataDirectory = dataDirectory
        self.extraEnvironment = Self.inherited.merging(extraEnvironment) { $1 }
    }

    /// What the processes take over from this one's environment: `CURVE_ENABLED`, so that
    /// `CURVE_ENABLED=0 scripts/bench gateway` measures the stack without CURVE.
    public static var inherited: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key == "CURVE_ENABLED" }
    }

    static let executables = [
        "auth": "AuthService", "profile": "ProfileService", "notification": "NotificationService", "gateway": "Gateway",
    ]
    static let prefixes = ["auth": "AUTH", "profile": "PROFILE", "notification": "NOTIFICATION"]

    /// The environment a service gets: clients' endpoints for the services already started,
    /// its own binds (ephemeral the first time, the same ports on a restart).
    /// On PostgreSQL (`TestStorage`) each service gets a database of its own on the test server,
    /// the same one on a restart.
    /// - Throws: `TestSupportError` when the PostgreSQL test server cannot start.
    func environment(for service: String) throws -> [String: String] {
        var env = extraEnvironment.merging(serviceEnvironment[Self.base(service)] ?? [:]) { $1 }
        env["DATA_DIR"] = dataDirectory
        env["LOG_LEVEL"] = env["LOG_LEVEL"] ?? "info"
        // Every replica of each other service, in a comma-separated list per endpoint.
        for (other, replicas) in Dictionary(grouping: endpoints, by: { Self.base($0.key) }) {
            guard let prefix = Self.prefixes[other], other != Self.base(service) else { continue }
            let ordered = replicas.sorted { $0.key < $1.key }.map(\.value)
            func list(_ field: String) -> String? {
                let values = ordered.compactMap { $0[field] }
                return values.isEmpty ? nil : values.joined(separator: ",")
            }
            env["\(prefix)_RPC_ENDPOINT"] = list("rpc")
            env["\(prefix)_EVENTS_ENDPOINT"] = list("events")
            if let delivery = list("delivery") { env["\(prefix)_DELIVERY_ENDPOINT"] = delivery }
        }
        if let prefix = Self.prefixes[Self.base(service)] {
            env["\(prefix)_RPC_BIND"] = endpoints[service]?["rpc"] ?? "tcp://127.0.0.1:*"
            env["\(prefix)_EVENTS_BIND"] = endpoints[service]?["events"] ?? "tcp://127.0.0.1:*"
            env["\(prefix)_DELIVERY_BIND"] = endpoints[service]?["delivery"] ?? "tcp://127.0.0.1:*"
            if env["\(prefix)_DATABASE_URL"] == nil {
                // Replicas share their service's database.
                env["\(prefix)_DATABASE_URL"] = try TestStorage.url(dataDirectory, Self.base(service))
            }
        }
        if Self.base(service) == "gateway" {
            env["GATEWAY_HOST"] = "127.0.0.1"
            env["GATEWAY_PORT"] = endpoints[service]?["port"] ?? "0"
            // Tests check behaviour, not speed: generous deadlines on a shared, loaded machine.
            env["GATEWAY_RPC_TIMEOUT_MS"] = env["GATEWAY_RPC_TIMEOUT_MS"] ?? "20000"
            env["GATEWAY_PASSWORD_RPC_TIMEOUT_MS"] = env["GATEWAY_PASSWORD_RPC_TIMEOUT_MS"] ?? "60000"
        }
        return env
    }

    /// The service a process name stands for: `profile` for `profile` and its replica
    /// `profile.2` (a second process of ProfileService on the same database, PostgreSQL only).
    public static func base(_ name: String) -> String {
        String(name.split(separator: ".", maxSplits: 1).first ?? Substring(name))
    }

    /// Chooses the ports of back-end processes before any starts (a free port of 127.0.0.1 for
    /// each endpoint), so that each process is given every other's endpoints, whatever the start
    /// order: ProfileService and NotificationService apply each other's events. The three
    /// services (less those `extraEnvironment` points elsewhere) are reserved by the first
    /// `start`; a test that runs replicas (`profile.2`) reserves them before it starts anything.
    /// - Throws: `TestSupportError` when no port can be had.
    public func reserve(_ names: [String]) throws {
        for name in names where endpoints[name] == nil {
            guard let prefix = Self.prefixes[Self.base(name)] else { continue }
            if extraEnvironment["\(prefix)_RPC_ENDPOINT"] != nil { continue }
            var fields = ["rpc": try Self.freeEndpoint(), "events": try Self.freeEndpoint()]
            if Self.base(name) == "notification" { fields["delivery"] = try Self.freeEndpoint() }
            endpoints[name] = fields
        }
    }

    /// `tcp://127.0.0.1:<port>` for a port the kernel gave out just now (bound to 0, then closed).
    static func freeEndpoint() throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(fd, p, length) == 0 && getsockname(fd, p, &length) == 0
            }
        }
        guard bound else { throw TestSupportError("bind: \(errno)") }
        return "tcp://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
    }

    /// Starts (or restarts, on the same ports) one service and waits until it is ready.
    @discardableResult
    public func start(_ service: String) async throws -> [String: String] {
        if processes.isEmpty { try reserve(["auth", "profile", "notification"]) }
        try reserve([service])
        let process = ServiceProcess(
            Self.executables[Self.base(service)]!, environment: try environment(for: service), logDirectory: dataDirectory,
            launcher: launchers[service] ?? [])
        let fields = try await process.start()
        processes[service] = process
        endpoints[service] = fields
        return fields
    }

    /// Starts the given services in order (default: the three back-end services).
    public func start(_ services: [String] = ["auth", "profile", "notification"]) async throws {
        for s in services { try await start(s) }
    }

    /// SIGTERM, wait; returns seconds taken.
    @discardableResult
    public func stop(_ service: String) -> Double? { processes[service]?.stop() }

    /// SIGKILL, wait.
    public func kill(_ service: String) { processes[service]?.kill() }

    /// SIGSTOP (see `ServiceProcess.pause`).
    public func pause(_ service: String) { processes[service]?.pause() }

    /// SIGCONT.
    public func resume(_ service: String) { processes[service]?.resume() }

    /// An RPC client to a started service. Calls that name no deadline get 60 s: these tests
    /// check behaviour, not speed, on shared machines where a busy moment can take seconds.
    public func client(_ service: String, context: ZMQContext) throws -> RPCClient {
        try RPCClient(
            service: Self.base(service), endpoint: endpoints[service]!["rpc"]!, context: context,
            logger: Logger(service: "test", minimum: .error), security: try security(context: context),
            defaultTimeoutMs: 60_000)
    }

    /// What a client of these processes (a test, a benchmark) or a stand-in for one of them (a
    /// `FakeProducer`) secures its sockets with: CURVE with key pair `name` among the stack's keys
    /// under `DATA_DIR/curve` (made there if missing; the services' ZAP handlers find a new key
    /// when it first connects), as the processes do by default; `.plain` when the cluster's
    /// environment sets `CURVE_ENABLED=false`.
    /// - Throws: a file error or `ConfigurationError`.
    public func security(context: ZMQContext, name: String = "harness") throws -> TransportSecurity {
        try Self.security(dataDirectory: dataDirectory, environment: extraEnvironment, context: context, name: name)
    }

    /// `security(context:name:)` for the stack under `dataDirectory` whose processes get
    /// `environment`.
    public static func security(
        dataDirectory: String, environment: [String: String] = [:], context: ZMQContext, name: String
    ) throws -> TransportSecurity {
        guard try Environment(environment).bool("CURVE_ENABLED", default: true) else { return .plain }
        return try CurveSecurity.security(
            keysDirectory: "\(dataDirectory)/curve", name: name, context: context,
            logger: Logger(service: name, minimum: .warning))
    }

    /// The gateway's HTTP port.
    public var gatewayPort: Int { Int(endpoints["gateway"]?["port"] ?? "0") ?? 0 }

    /// Stops everything.
    public func stopAll() {
        let order = ["gateway", "notification", "profile", "auth"]
        for name in processes.keys.sorted(by: {
            (order.firstIndex(of: Self.base($0)) ?? 0, $0) < (order.firstIndex(of: Self.base($1)) ?? 0, $1)
        }) {
            processes[name]?.stop()
        }
    }

    deinit { stopAll() }
}

/// Waits until `client` can reach its service (a ping answered), polling with short RPC
/// deadlines rather than sleeping.
/// - Throws: `TimedOut` after `timeoutMs`; an error of the ping other than 503 or 504 at once.
public func waitUntilReachable(_ client: RPCClient, timeoutMs: Int64 = 60_000) async throws {
    try await eventually("\(client.service) reachable", within: Double(timeoutMs) / 1000, intervalMs: 0) {
        do {
            _ = try await client.call(Ops.Ping.self, Empty(), timeoutMs: 500)
            return true
        } catch let e as ServiceError where e.status == 503 || e.status == 504 {
            return false
        }
    }
}
