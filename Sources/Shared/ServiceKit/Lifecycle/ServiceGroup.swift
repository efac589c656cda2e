import Dispatch
import Foundation
import Support
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// Something that runs until it stops, in the shape of swift-service-lifecycle's `Service`.
public protocol Service: Sendable {
    /// Runs until cancelled, or until its graceful shutdown has finished.
    func run() async throws
    /// Asks the service to finish what it is doing and return from `run()` (stop taking new
    /// work, answer what is in flight). Returns at once; `run()` returns when done. The default
    /// does nothing: such a service is cancelled when its turn comes.
    func shutdownGracefully()
}

extension Service {
    public func shutdownGracefully() {}
}

/// A closure as a `Service` (stopped by cancellation).
public struct ServiceClosure: Service {
    let body: @Sendable () async throws -> Void
    public init(_ body: @escaping @Sendable () async throws -> Void) { self.body = body }
    public func run() async throws { try await body() }
}

/// Runs services together and stops them as swift-service-lifecycle does: on SIGTERM or SIGINT
/// (or when one of them stops or fails on its own) the services are shut down one at a time in
/// reverse start order — each asked to shut down gracefully, then cancelled if it has not
/// returned within what is left of the grace period — so a service never outlives one it
/// depends on. After the grace period everything still running is cancelled.
///
/// The services run as child tasks of one task group (structured concurrency): cancelling the
/// task that calls `run()` cancels every service, and `run()` returns only after every service
/// has returned. A service that is slow to honour cancellation is logged
/// (`service.stop_slow`) and the shutdown goes on with the next one, but `run()` still waits
/// for it.
///
/// The group installs the process's only SIGTERM/SIGINT handler (and ignores SIGPIPE).
public struct ServiceGroup: Sendable {
    let services: [(name: String, service: any Service)]
    let logger: Logger
    /// The whole shutdown's budget in ms (default 900: a service stops within a second).
    let gracePeriodMs: Int64
    /// Whether `run()` installs the SIGTERM/SIGINT handlers (tests run groups without them).
    let handlesSignals: Bool

    /// - Parameter services: in start order, each with a name for the logs.
    public init(services: [(name: String, service: any Service)], logger: Logger, gracePeriodMs: Int64 = 900) {
        self.init(services: services, logger: logger, gracePeriodMs: gracePeriodMs, handlesSignals: true)
    }

    init(services: [(name: String, service: any Service)], logger: Logger, gracePeriodMs: Int64, handlesSignals: Bool) {
        self.services = services
        self.logger = logger
        self.gracePeriodMs = gracePeriodMs
        self.handlesSignals = handlesSignals
    }

    /// Why the group stopped.
    public enum Stop: Sendable, Equatable {
        /// A signal (its number).
        case signal(Int32)
        /// A service returned on its own (its name), or the caller's task was cancelled (`""`).
        case serviceReturned(String)
    }

    private enum Completion: Sendable {
        case signal(Int32)
        case finished(Int, (any Error)?)
        /// Service `i` was cancelled and still had not returned 200 ms later.
        case slow(Int)
    }

    /// Runs until a signal arrives, a service returns or fails, or the calling task is
    /// cancelled, then shuts everything down and waits for every service to return.
    /// - Returns: why it stopped.
    /// - Throws: the error of the first service that failed on its own.
    @discardableResult
    public func run() async throws -> Stop {
        let (events, sink) = AsyncStream<Completion>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        if handlesSignals {
            signal(SIGPIPE, SIG_IGN)
            signal(SIGTERM, SIG_IGN)
            signal(SIGINT, SIG_IGN)
            sources = [SIGTERM, SIGINT].map { sig -> any DispatchSourceSignal in
                let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                source.setEventHandler { sink.yield(.signal(sig)) }
                source.resume()
                return source
            }
        }
        defer { for s in sources { s.cancel() } }
        // One gate per service: finishing it cancels that service (and only it).
        let gates = services.map { _ in AsyncStream<Never>.makeStream() }
        let (stop, failure) = await withTaskGroup(of: Void.self, returning: (Stop, (any Error)?).self) { group in
            for (i, entry) in services.enumerated() {
                let gate = gates[i].stream
                group.addTask {
                    await withTaskGroup(of: Void.self) { own in
                        own.addTask {
                            do {
                                try await entry.service.run()
                                sink.yield(.finished(i, nil))
                            } catch {
                                sink.yield(.finished(i, error))
                            }
                        }
                        // Returns when the gate is finished or this child is cancelled.
                        own.addTask { for await _ in gate {} }
                        _ = await own.next()
                        own.cancelAll()
                    }
                }
            }
            let result = await shutDown(events: events, sink: sink, cancel: { gates[$0].continuation.finish() })
            group.cancelAll()
            return result
        }
        sink.finish()
        if let failure { throw failure }
        return stop
    }

    /// Waits for the reason to stop, then stops the services in reverse start order.
    private func shutDown(
        events: AsyncStream<Completion>, sink: AsyncStream<Completion>.Continuation, cancel: @escaping @Sendable (Int) -> Void
    ) async -> (Stop, (any Error)?) {
        var running = Set(services.indices)
        var iterator = events.makeAsyncIterator()
        let stop: Stop
        var failure: (any Error)?
        switch await iterator.next() {
        case .signal(let sig):
            logger.info("service.signal", metadata: ["signal": "\(sig)"])
            stop = .signal(sig)
        case .finished(let i, let error):
            running.remove(i)
            if let error, !(error is CancellationError) {
                logger.error("service.failed", metadata: ["component": services[i].name, "error": "\(error)"])
                failure = error
            }
            // The caller's cancellation reaches the services and this wait at once: a service
            // that returned because of it can be seen before the wait ends. It is still the
            // caller's stop.
            stop = Task.isCancelled ? .serviceReturned("") : .serviceReturned(services[i].name)
        case .slow, nil:
            stop = .serviceReturned("")
        }
        // Reverse start order, one at a time, within the grace period.
        let deadline = Timestamp.nowMs() + gracePeriodMs
        for i in services.indices.reversed() where running.contains(i) {
            services[i].service.shutdownGracefully()
            let waitMs = max(0, deadline - Timestamp.nowMs())
            let timer = Task {
                try await Task.sleep(for: .milliseconds(waitMs))
                cancel(i)
                try await Task.sleep(for: .milliseconds(200))
                sink.yield(.slow(i))
            }
            wait: while running.contains(i), let event = await iterator.next() {
                switch event {
                case .finished(let j, _): running.remove(j)
                case .slow(let j) where j == i:
                    logger.warning("service.stop_slow", metadata: ["component": services[i].name])
                    break wait
                default: continue
                }
            }
            timer.cancel()
            _ = await timer.result
        }
        for i in services.indices { cancel(i) }
        return (stop, failure)
    }
}
