import Messages
import ServiceKit
import Transport

/// The executable's back ends: an `RPCClient` per service over ZeroMQ, driven by the HTTP
/// server's loop, NotificationService's delivery sockets and AuthService's events.
struct ServiceBackends: GatewayBackends {
    let auth: any ServiceBackend
    let profile: any ServiceBackend
    let notification: any ServiceBackend
    let loop: (executor: LoopExecutor, wakeup: Wakeup)?
    let drivenClients: [RPCClient]
    /// AuthService's events (its revoked sessions), replayed from its RPC socket after a gap.
    let authEvents: LiveEventSubscriber
    private let runtime: ServiceRuntime

    /// Makes the clients (nothing connects until they are driven).
    /// - Throws: what `RPCClient` throws for an endpoint it cannot use.
    init(runtime: ServiceRuntime, configuration: GatewayConfiguration) throws {
        self.runtime = runtime
        // The HTTP loop's thread runs the handlers and drives the back ends' sockets, so a
        // request's calls are sent and answered on it (see `LoopExecutor`, `RPCPump`).
        let wakeup = Wakeup()
        let executor = LoopExecutor(wakeup: wakeup)
        func client(_ service: ServiceDescription) throws -> RPCClient {
            try RPCClient(
                service: service.name, endpoint: service.endpoints(runtime.env).rpc, context: runtime.context,
                logger: runtime.logger, security: runtime.security, drivenBy: executor, wakeup: wakeup)
        }
        let clients = (auth: try client(.auth), profile: try client(.profile), notification: try client(.notification))
        auth = RPCBackend(client: clients.auth, timeoutMs: configuration.rpcTimeoutMs)
        profile = RPCBackend(client: clients.profile, timeoutMs: configuration.rpcTimeoutMs)
        notification = RPCBackend(client: clients.notification, timeoutMs: configuration.rpcTimeoutMs)
        loop = (executor, wakeup)
        drivenClients = [clients.auth, clients.profile, clients.notification]
        authEvents = LiveEventSubscriber(
            producer: .auth, endpoint: ServiceDescription.auth.endpoints(runtime.env).events, context: runtime.context,
            replay: clients.auth, logger: runtime.logger, security: runtime.security)
    }

    func feeds(live: LiveNotifications, sessions: SessionControl) -> [(name: String, service: any Service)] {
        let delivery = live.connect(
            context: runtime.context,
            // Every NotificationService replica's delivery socket: each publishes what it wrote.
            endpoints: RPCClient.split(
                ServiceDescription.notification.endpoints(runtime.env).delivery ?? "tcp://127.0.0.1:5557"),
            security: runtime.security)
        authEvents.on(Auth.SessionRevoked.self) { events in sessions.revoke(events.flatMap(\.body.sessionIds)) }
        return [("delivery", delivery), ("subscriber.auth", authEvents)]
    }

    /// Waits until AuthService's subscriber knows where it starts (at most `timeoutMs` ms), so a
    /// logout after the gateway says it is ready closes the session's streams.
    func waitUntilStarted(timeoutMs: Int) async { await authEvents.waitUntilStarted(timeoutMs: timeoutMs) }
}
