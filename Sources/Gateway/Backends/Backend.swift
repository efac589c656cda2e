import Foundation
import Messages
import ServiceKit
import Wire

/// One back-end service as the gateway calls it: an `RPCClient` with the gateway's deadline and
/// call metrics (`rpc_calls_total`, `rpc_call_duration_seconds`).
struct Backend: Sendable {
    let client: RPCClient
    let metrics: Metrics
    /// Default deadline per call in ms (`GATEWAY_RPC_TIMEOUT_MS`).
    let timeoutMs: Int

    var service: String { client.service }

    /// Calls the service.
    /// - Parameter idempotent: whether the call may be sent again after its peer was lost (nil:
    ///   `R.isIdempotent`); see `RPCClient.call`.
    /// - Throws: `ServiceError` (the service's own, or 503 `service_unavailable` / 504 `service_timeout`).
    func call<R: RPC>(_ rpc: R.Type, _ request: R.Request, timeoutMs: Int? = nil, idempotent: Bool? = nil) async throws
        -> R.Reply
    {
        try await call(rpc, request, binary: nil, timeoutMs: timeoutMs, idempotent: idempotent).reply
    }

    /// Calls the service with raw bytes in a binary frame after the envelope (nil: none).
    /// - Returns: the reply, and the binary frame after it (nil: none).
    /// - Throws: as `call(_:_:timeoutMs:idempotent:)`.
    func call<R: RPC>(
        _ rpc: R.Type, _ request: R.Request, binary: [UInt8]?, timeoutMs: Int? = nil, idempotent: Bool? = nil
    ) async throws -> (reply: R.Reply, binary: [UInt8]?) {
        let start = DispatchTime.now().uptimeNanoseconds
        var outcome = "ok"
        defer {
            metrics.recordCall(
                service: client.service, type: R.type, outcome: outcome,
                seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        do {
            return try await client.call(
                rpc, request, binary: binary, timeoutMs: timeoutMs ?? self.timeoutMs, trace: RequestTrace.id,
                idempotent: idempotent)
        } catch let error as ServiceError {
            switch error.errorCode {
            case .serviceUnavailable: outcome = "unavailable"
            case .serviceTimeout: outcome = "timeout"
            default: outcome = error.status >= 500 ? "server_error" : "client_error"
            }
            throw error
        }
    }
}

/// The id of the request being handled, carried as the trace id of the service calls made for
/// it (so a request's log lines in every service share it).
enum RequestTrace {
    @TaskLocal static var id: String?
}

/// The gateway's three back ends.
struct Backends: Sendable {
    let auth: Backend
    let profile: Backend
    let notification: Backend
}
