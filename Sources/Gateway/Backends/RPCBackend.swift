import Messages
import ServiceKit

/// A back-end service over ZeroMQ: an `RPCClient` with the gateway's default deadline, each
/// call carrying the request's id as its trace (`RequestTrace`).
struct RPCBackend: ServiceBackend {
    let client: RPCClient
    /// Default deadline per call in ms (`GATEWAY_RPC_TIMEOUT_MS`).
    let timeoutMs: Int

    var service: String { client.service }

    func send<R: RPC>(_ rpc: R.Type, _ request: R.Request, binary: [UInt8]?, timeoutMs: Int?, idempotent: Bool?)
        async throws -> (reply: R.Reply, binary: [UInt8]?)
    {
        try await client.call(
            rpc, request, binary: binary, timeoutMs: timeoutMs ?? self.timeoutMs, trace: RequestTrace.id,
            idempotent: idempotent)
    }
}
