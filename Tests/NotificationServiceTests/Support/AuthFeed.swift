import BackendKit
import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import TestSupport

@testable import NotificationService

/// The fake AuthService's events into an `InProcessService`, as `ProfileFeed` does ProfileService's:
/// a real `EventSubscriber` on the service's database with the handlers NotificationService
/// registers for AuthService (the identity replica, devices, account states).
final class AuthFeed: Sendable {
    let replay: RPCClient
    private let service: InProcessService
    private let task = Locked<(subscriber: EventSubscriber, task: Task<Void, any Error>)?>(nil)

    init(into service: InProcessService) async throws {
        self.service = service
        let bound = service.auth.producer.host.boundEndpoints.withLock { $0 }
        replay = try RPCClient(
            service: "auth", endpoint: bound.rpc, context: service.context, logger: InProcessService.logger,
            defaultTimeoutMs: 10_000)
        let subscriber = EventSubscriber(
            producer: .auth, endpoint: bound.events, context: service.context, replay: replay,
            database: service.database, logger: InProcessService.logger)
        service.app.replica.subscribe(subscriber)
        service.app.devices.subscribe(subscriber)
        service.app.accounts.subscribeAuth(subscriber)
        task.withLock { $0 = (subscriber, Task { try await subscriber.run() }) }
    }

    /// Emits one event from the fake AuthService and waits until the service applied it.
    func emit<E: Event>(_ event: E) async throws {
        let seq = try await service.auth.producer.emit(event)
        let current = self.task
        try await eventually("auth events through seq \(seq) applied") {
            let counters = current.withLock { $0?.subscriber.counters() } ?? [:]
            return counters["subscriber.auth.delivered", default: 0] >= seq
        }
    }

    func stop() {
        task.withLock { $0?.task.cancel() }
        replay.shutdown()
    }
}
