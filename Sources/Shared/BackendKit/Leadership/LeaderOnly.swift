import Foundation
import ServiceKit
import Support
import Synchronization

/// Runs services only while this replica is the active one (see `Leadership`): started when it
/// becomes active, cancelled when it stands down, started again when it is active again. The
/// services must support being run again after a cancelled run.
public final class LeaderOnly: Service {
    private let leadership: Leadership
    private let services: [(name: String, service: any Service)]
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    /// How long a service that failed or returned while this replica is active waits before it
    /// runs again, in ms.
    static let restartDelayMs = 1_000

    public init(leadership: Leadership, services: [(name: String, service: any Service)], logger: Logger) {
        self.leadership = leadership
        self.services = services
        self.logger = logger
    }

    public func run() async {
        var term: Task<Void, Never>?
        for await active in leadership.updates() {
            if Task.isCancelled || stopping.load(ordering: .acquiring) { break }
            if active, term == nil {
                let services = self.services
                let logger = self.logger
                term = Task {
                    await withTaskGroup(of: Void.self) { group in
                        for (name, service) in services {
                            group.addTask {
                                // A service that fails (e.g. its first read while the database
                                // is still coming back) runs again while this replica is active.
                                while !Task.isCancelled {
                                    do { try await service.run() } catch is CancellationError {} catch {
                                        logger.error(
                                            "leader.service_failed", metadata: ["service": name, "error": "\(error)"])
                                    }
                                    if Task.isCancelled { break }
                                    try? await Task.sleep(for: .milliseconds(Self.restartDelayMs))
                                }
                            }
                        }
                    }
                }
            } else if !active, let running = term {
                running.cancel()
                await running.value
                term = nil
            }
        }
        term?.cancel()
        await term?.value
    }

    /// Asks the services to finish, and stops running them (the replica stays elected until its
    /// process ends; `Leadership` stops last).
    public func shutdownGracefully() {
        stopping.store(true, ordering: .releasing)
        for (_, service) in services { service.shutdownGracefully() }
        leadership.poke()
    }
}
