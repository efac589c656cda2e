import Foundation
import Messages
import ServiceKit
import Storage
import Support
import Synchronization

/// Publishes the service's outbox from the table, in sequence order, while this replica is the
/// active one (run it under `LeaderOnly`): the events every replica commits, each once.
///
/// It starts at the outbox's head when it takes over, announces that head in a heartbeat at
/// once, and then reads and publishes what follows whenever a commit rings (this replica's
/// commits directly, the others' through `NOTIFY outbox`), and at least every second. Events
/// the previous active replica committed and did not publish are not published again:
/// subscribers see the heartbeat's head above their cursor and replay them (`ops.replay`, which
/// every replica answers), so nothing is skipped or repeated, whoever published last.
public final class OutboxRelay: Service {
    private let database: Database
    private let host: ServiceHost
    private let logger: Logger
    /// Rung by commits (see `ServiceRunner`).
    public let doorbell = Doorbell()

    public init(database: Database, host: ServiceHost, logger: Logger) {
        self.database = database
        self.host = host
        self.logger = logger
    }

    public func run() async {
        var published: Int64?
        defer { host.stopPublishing() }
        while !Task.isCancelled {
            do {
                if published == nil {
                    let head = try await database.outbox(after: Int64.max - 1, limit: 0).head
                    published = head
                    host.startPublishing(head: head)
                }
                let (_, events) = try await database.outbox(
                    after: published!, limit: 1_000, maxBytes: Ops.Replay.maxBytes)
                if !events.isEmpty {
                    host.publish(events)
                    published = events.last!.seq
                    continue  // more may follow
                }
            } catch {
                logger.warning("outbox.relay_failed", metadata: ["error": "\(error)"])
            }
            await doorbell.wait(timeoutMs: 1_000)
        }
    }
}
