import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Something that runs until cancelled, in the shape of swift-service-lifecycle's `Service`.
public protocol Service: Sendable {
    func run() async throws
}

/// A closure as a `Service`.
public struct ServiceClosure: Service {
    let body: @Sendable () async throws -> Void
    public init(_ body: @escaping @Sendable () async throws -> Void) { self.body = body }
    public func run() async throws { try await body() }
}

/// Runs services together; SIGTERM or SIGINT (or any service failing) cancels them all.
public struct ServiceGroup: Sendable {
    let services: [any Service]
    let logger: Logger

    public init(services: [any Service], logger: Logger) {
        self.services = services
        self.logger = logger
    }

    /// Runs until a signal arrives or a service fails.
    /// - Throws: the first error a service threw (after cancelling the rest).
    public func run() async throws {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        let services = self.services
        let logger = self.logger
        try await withThrowingTaskGroup(of: Void.self) { group in
            let signals = [SIGTERM, SIGINT].map { sig -> DispatchSourceSignal in
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                return source
            }
            let (stream, continuation) = AsyncStream<Int32>.makeStream()
            for (sig, source) in zip([SIGTERM, SIGINT], signals) {
                source.setEventHandler { continuation.yield(sig) }
                source.resume()
            }
            group.addTask {
                for await sig in stream {
                    logger.info("service.signal", metadata: ["signal": "\(sig)"])
                    throw CancellationError()
                }
            }
            for service in services {
                group.addTask { try await service.run() }
            }
            do {
                try await group.next()
                group.cancelAll()
                while (try? await group.next()) != nil {}
            } catch is CancellationError {
                group.cancelAll()
                while (try? await group.next()) != nil {}
            } catch {
                group.cancelAll()
                while (try? await group.next()) != nil {}
                throw error
            }
            continuation.finish()
            for s in signals { s.cancel() }
        }
    }
}
