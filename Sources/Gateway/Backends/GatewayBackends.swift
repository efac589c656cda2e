import ServiceKit
import Transport

/// What the gateway is built on (`buildApplication`): the three services it calls, and the
/// feeds that keep its live state current. The executable's are `ServiceBackends` (ZeroMQ clients
/// and subscribers); a test hands in fakes, which need give only the three services.
protocol GatewayBackends: Sendable {
    /// AuthService: accounts, sessions, token validation.
    var auth: any ServiceBackend { get }
    /// ProfileService: profiles, posts, engagement, settings, media.
    var profile: any ServiceBackend { get }
    /// NotificationService: the follow graph, notifications, devices and push preferences.
    var notification: any ServiceBackend { get }

    /// The executor and wakeup of the loop the HTTP server runs its handlers on, when the back
    /// ends' sockets are driven by that loop (a request's calls are then sent and answered on
    /// its thread: `LoopExecutor`, `RPCPump`); nil: the server makes its own (the default).
    var loop: (executor: LoopExecutor, wakeup: Wakeup)? { get }

    /// The RPC clients whose sockets the server's loop drives (made `drivenBy:` `loop`); none by
    /// default.
    var drivenClients: [RPCClient] { get }

    /// The services that keep the gateway's live state current, run beside the HTTP server
    /// (started before it, stopped after it): NotificationService's deliveries into `live`,
    /// AuthService's revoked sessions into `sessions`. None by default (a fake's live state
    /// changes only through its calls).
    func feeds(live: LiveNotifications, sessions: SessionControl) -> [(name: String, service: any Service)]
}

extension GatewayBackends {
    var loop: (executor: LoopExecutor, wakeup: Wakeup)? { nil }
    var drivenClients: [RPCClient] { [] }
    func feeds(live: LiveNotifications, sessions: SessionControl) -> [(name: String, service: any Service)] { [] }
}
