import Messages

/// One back-end service as the controllers call it: typed RPCs (the RPC's type fixes request and
/// reply), each with a deadline. The gateway is built on this protocol (Hummingbird's todos
/// example builds on its `TodoRepository`), so a test hands in a fake: `RPCBackend` is the real
/// one (a ZeroMQ `RPCClient`), `MeteredBackend` counts the calls of any.
protocol ServiceBackend: Sendable {
    /// The service's name (`auth`, `profile`, `notification`): the `service` label of the call
    /// metrics.
    var service: String { get }

    /// Calls the service.
    /// - Parameters:
    ///   - binary: raw bytes sent in a frame after the request's envelope (nil: none).
    ///   - timeoutMs: the call's deadline in ms (nil: the back end's default,
    ///     `GATEWAY_RPC_TIMEOUT_MS`).
    ///   - idempotent: whether the call may be sent again after its peer was lost (nil:
    ///     `R.isIdempotent`); see `RPCClient.call`.
    /// - Returns: the reply, and the binary frame after it (nil: none).
    /// - Throws: `ServiceError`: the service's own, or 503 `service_unavailable` / 504
    ///   `service_timeout`.
    func send<R: RPC>(_ rpc: R.Type, _ request: R.Request, binary: [UInt8]?, timeoutMs: Int?, idempotent: Bool?)
        async throws -> (reply: R.Reply, binary: [UInt8]?)
}

extension ServiceBackend {
    /// Calls the service (see `send`).
    /// - Throws: `ServiceError`, as `send`.
    func call<R: RPC>(_ rpc: R.Type, _ request: R.Request, timeoutMs: Int? = nil, idempotent: Bool? = nil) async throws
        -> R.Reply
    {
        try await send(rpc, request, binary: nil, timeoutMs: timeoutMs, idempotent: idempotent).reply
    }

    /// Calls the service with raw bytes in a binary frame after the envelope (nil: none).
    /// - Returns: the reply, and the binary frame after it (nil: none).
    /// - Throws: `ServiceError`, as `send`.
    func call<R: RPC>(
        _ rpc: R.Type, _ request: R.Request, binary: [UInt8]?, timeoutMs: Int? = nil, idempotent: Bool? = nil
    ) async throws -> (reply: R.Reply, binary: [UInt8]?) {
        try await send(rpc, request, binary: binary, timeoutMs: timeoutMs, idempotent: idempotent)
    }
}
