import Foundation
import Messages
import Wire

/// A back end whose calls are counted in the gateway's metrics: `rpc_calls_total{service,type,
/// outcome}` (outcome `ok`, `client_error`, `server_error`, `unavailable`, `timeout`) and
/// `rpc_call_duration_seconds{service}`.
struct MeteredBackend: ServiceBackend {
    let base: any ServiceBackend
    let metrics: Metrics

    var service: String { base.service }

    func send<R: RPC>(_ rpc: R.Type, _ request: R.Request, binary: [UInt8]?, timeoutMs: Int?, idempotent: Bool?)
        async throws -> (reply: R.Reply, binary: [UInt8]?)
    {
        let start = DispatchTime.now().uptimeNanoseconds
        var outcome = "ok"
        defer {
            metrics.recordCall(
                service: base.service, type: R.type, outcome: outcome,
                seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        do {
            return try await base.send(rpc, request, binary: binary, timeoutMs: timeoutMs, idempotent: idempotent)
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
