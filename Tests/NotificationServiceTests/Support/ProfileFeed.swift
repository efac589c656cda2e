import BackendKit
import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import Support
import TestSupport

@testable import NotificationService

/// ProfileService's events into an `InProcessService`: a fake producer named `profile` on
/// loopback and a real `EventSubscriber` on the service's database running the typed handlers
/// `ProfileEventHandlers` registers (real sockets, no process).
final class ProfileFeed: Sendable {
    let producer: FakeProducer
    let replay: RPCClient
    private let service: InProcessService
    private let endpoint: String
    private let current = Locked<(subscriber: EventSubscriber, task: Task<Void, any Error>)?>(nil)

    init(into service: InProcessService) async throws {
        self.service = service
        producer = try FakeProducer(name: "profile", context: service.context, directory: service.directory)
        let bound = try producer.start()
        endpoint = bound.events
        replay = try RPCClient(
            service: "profile", endpoint: bound.rpc, context: service.context, logger: InProcessService.logger,
            defaultTimeoutMs: 10_000)
        try await waitUntilReachable(replay, timeoutMs: 60_000)
        subscribe()
    }

    /// Starts a subscriber (it starts after the cursor stored in the service's database).
    private func subscribe() {
        let subscriber = EventSubscriber(
            producer: .profile, endpoint: endpoint, context: service.context, replay: replay,
            database: service.database, logger: InProcessService.logger)
        service.app.profileEvents.subscribe(subscriber)
        service.app.accounts.subscribeProfile(subscriber)
        let task = Task { try await subscriber.run() }
        current.withLock { $0 = (subscriber, task) }
    }

    /// Stops the subscriber and waits until it has stopped.
    func unsubscribe() async {
        guard let task = current.withLock({ $0?.task }) else { return }
        task.cancel()
        _ = await task.result
    }

    /// Stops the subscriber (if running) and starts a new one from the stored cursor.
    func resubscribe() async {
        await unsubscribe()
        subscribe()
    }

    /// Emits one event and waits until the service applied it.
    func emit<E: Event>(_ event: E) async throws {
        try await waitForApplied(through: try await producer.emit(event))
    }

    /// Emits events in one producer transaction (they arrive together) and waits until the
    /// service applied them all.
    func emit(_ body: @escaping @Sendable (Transaction) throws -> Void) async throws {
        try await producer.write(body)
        try await waitForApplied(through: producer.database.currentHead())
    }

    /// Waits until the current subscriber applied every event up to `seq` (its `delivered`
    /// counter: the producer's sequence numbers start at 1, and a subscriber on a fresh
    /// database, or one whose cursor was reset, starts at the beginning).
    func waitForApplied(through seq: Int64) async throws {
        let current = self.current
        try await eventually("profile events through seq \(seq) applied") {
            let counters = current.withLock { $0?.subscriber.counters() } ?? [:]
            return counters["subscriber.profile.delivered", default: 0] >= seq
        }
    }

    /// A like by `liker` on `owner`'s post.
    func like(_ liker: Identity, _ owner: Identity, post: String, type: String? = nil) async throws {
        try await emit(
            Profile.PostLiked(
                postId: post, ownerId: owner.id, userId: liker.id, thumbnailURL: "https://img.example/\(post).jpg",
                postType: type))
    }

    func stop() {
        current.withLock { $0?.task.cancel() }
        replay.shutdown()
        producer.stop()
    }
}
