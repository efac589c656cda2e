import Foundation
import Testing

@testable import ServiceKit
@testable import Support

/// `ServiceGroup` runs its services as child tasks: none outlives `run()`.
struct ServiceGroupTests {
    /// What the services did, in order.
    final class Record: Sendable {
        let events = Locked<[String]>([])
        func add(_ event: String) { events.withLock { $0.append(event) } }
        var all: [String] { events.withLock { $0 } }
    }

    /// Blocks until cancelled, then records that it finished.
    struct BlocksUntilCancelled: Service {
        let name: String
        let record: Record
        let started: AsyncStream<Void>.Continuation
        func run() async throws {
            record.add("\(name) started")
            started.yield()
            defer { record.add("\(name) finished") }
            try await Task.sleep(for: .seconds(3_600))
        }
    }

    /// Returns once `go` yields.
    struct ReturnsWhenTold: Service {
        let record: Record
        let go: AsyncStream<Void>
        func run() async throws {
            for await _ in go { break }
            record.add("returner finished")
        }
    }

    static let logger = Logger(service: "group-test", minimum: .error)

    /// Cancelling the task that runs the group cancels its services, and `run()` returns only
    /// after they have returned (the grace period is an hour: nothing but cancellation stops
    /// the child).
    @Test func cancellingTheCallerStopsEveryServiceBeforeRunReturns() async throws {
        let record = Record()
        let (started, startedSink) = AsyncStream<Void>.makeStream()
        let group = ServiceGroup(
            services: [("blocker", BlocksUntilCancelled(name: "blocker", record: record, started: startedSink))],
            logger: Self.logger, gracePeriodMs: 3_600_000, handlesSignals: false)
        let running = Task { try await group.run() }
        for await _ in started { break }
        running.cancel()
        let stop = try await running.value
        #expect(stop == .serviceReturned(""))
        #expect(record.all == ["blocker started", "blocker finished"])
    }

    /// A service returning on its own stops the others; each is finished when `run()` returns.
    @Test func aServiceReturningStopsTheOthersBeforeRunReturns() async throws {
        let record = Record()
        let (started, startedSink) = AsyncStream<Void>.makeStream()
        let (go, goSink) = AsyncStream<Void>.makeStream()
        let group = ServiceGroup(
            services: [
                ("first", BlocksUntilCancelled(name: "first", record: record, started: startedSink)),
                ("returner", ReturnsWhenTold(record: record, go: go)),
                ("last", BlocksUntilCancelled(name: "last", record: record, started: startedSink)),
            ],
            logger: Self.logger, gracePeriodMs: 0, handlesSignals: false)
        let running = Task { try await group.run() }
        var count = 0
        for await _ in started {
            count += 1
            if count == 2 { break }
        }
        goSink.yield()
        let stop = try await running.value
        #expect(stop == .serviceReturned("returner"))
        let events = record.all
        #expect(Set(events.filter { $0.hasSuffix("finished") }) == ["returner finished", "last finished", "first finished"])
    }
}
