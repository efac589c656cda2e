import BackendKit
import Foundation
import Messages
import Support
import Synchronization
import Wire

@testable import Gateway

/// A back-end service in process, handed to the gateway through `GatewayBackends` so a
/// controller runs without sockets or processes: handlers registered per RPC type as on a
/// `ServiceHost` (`on`, `onBinary`, the same signatures), each request and reply taken through
/// the wire JSON as the real transport takes them, and every call recorded. Like a real host it
/// answers a type it has no handler for with `unknown_type` (the gateway's 502), and an error
/// other than a `ServiceError` with `internal_error`.
final class FakeService: ServiceBackend {
    /// One call as the service received it.
    struct Call: Sendable {
        /// The RPC's type, e.g. `profile.update_me`.
        var type: String
        /// The request's wire JSON.
        var body: [UInt8]
        var binary: [UInt8]?
        var timeoutMs: Int?
        var idempotent: Bool?
    }

    private typealias Handler = @Sendable ([UInt8], [UInt8]?, RequestContext) async throws -> ([UInt8], [UInt8]?)

    let service: String
    private let handlers = Mutex<[String: Handler]>([:])
    private let log = Mutex<[Call]>([])

    init(_ service: String) { self.service = service }

    /// Answers `R` with `handler`.
    func on<R: RPC>(_ rpc: R.Type, _ handler: @escaping @Sendable (R.Request, RequestContext) async throws -> R.Reply) {
        onBinary(rpc) { request, _, context in (try await handler(request, context), nil) }
    }

    /// Answers `R` with `handler`, which gets the binary frame after the request (nil: none) and
    /// may return one after the reply.
    func onBinary<R: RPC>(
        _ rpc: R.Type,
        _ handler: @escaping @Sendable (R.Request, [UInt8]?, RequestContext) async throws -> (R.Reply, [UInt8]?)
    ) {
        handlers.withLock {
            $0[R.type] = { body, binary, context in
                let (reply, replyBinary) = try await handler(try WireJSON.decode(R.Request.self, from: body), binary, context)
                return (try WireJSON.encode(reply), replyBinary)
            }
        }
    }

    func send<R: RPC>(_ rpc: R.Type, _ request: R.Request, binary: [UInt8]?, timeoutMs: Int?, idempotent: Bool?)
        async throws -> (reply: R.Reply, binary: [UInt8]?)
    {
        let body = try WireJSON.encode(request)
        log.withLock {
            $0.append(Call(type: R.type, body: body, binary: binary, timeoutMs: timeoutMs, idempotent: idempotent))
        }
        guard let handler = handlers.withLock({ $0[R.type] }) else {
            throw ServiceError.badRequest(.unknownType, "no handler for \(R.type)")
        }
        let context = RequestContext(
            correlationId: RandomID.make(), type: R.type, deadline: Timestamp.nowMs() + Int64(timeoutMs ?? 2_000),
            trace: RequestTrace.id ?? "", logger: Logger(service: service, minimum: .error))
        let reply: [UInt8]
        let replyBinary: [UInt8]?
        do {
            (reply, replyBinary) = try await handler(body, binary, context)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(code: ServiceErrorCode.internalError.wire, message: "internal error", status: 500)
        }
        return (try WireJSON.decode(R.Reply.self, from: reply), replyBinary)
    }

    /// Every call received, in order.
    var calls: [Call] { log.withLock { $0 } }

    /// The requests of `R` received, in order, as the service decoded them.
    func requests<R: RPC>(_ rpc: R.Type) -> [R.Request] {
        calls.filter { $0.type == R.type }.compactMap { try? WireJSON.decode(R.Request.self, from: $0.body) }
    }

    /// How many calls of `R` were received.
    func count<R: RPC>(_ rpc: R.Type) -> Int { calls.filter { $0.type == R.type }.count }
}
