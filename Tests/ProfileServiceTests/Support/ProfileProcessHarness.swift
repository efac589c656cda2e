import Foundation
import Harness
import Messages
import ServiceKit
import Storage
import TestSupport
import Transport
import Wire

#if canImport(Glibc)
    import Glibc
#endif

/// The real ProfileService executable (TestSupport's `Cluster`) with AuthService stood in by an
/// in-process `AuthStandIn` whose endpoints it is given (`AUTH_RPC_ENDPOINT`,
/// `AUTH_EVENTS_ENDPOINT`), and an RPC client to it. For what only a process shows: restarts,
/// crashes, the published event stream.
///
/// Every wait is bounded and throws: a start that never prints its ready line is killed after
/// 90 s (TestSupport's `ServiceProcess.start` does not enforce its `timeout` itself), a stop that
/// does not finish in 30 s is turned into a kill.
final class ProfileProcessHarness: Sendable {
    let zmq: ZMQContext
    let auth: AuthStandIn
    let cluster: Cluster
    let profile: RPCClient

    private init(zmq: ZMQContext, auth: AuthStandIn, cluster: Cluster, profile: RPCClient) {
        self.zmq = zmq
        self.auth = auth
        self.cluster = cluster
        self.profile = profile
    }

    /// Starts the stand-in and ProfileService, and waits until ProfileService answers.
    /// - Parameter answerLookups: false makes `auth.lookup_users` find nobody, so ProfileService
    ///   knows accounts only from the events.
    static func start(answerLookups: Bool = true) async throws -> ProfileProcessHarness {
        let zmq = ZMQContext()
        let directory = makeTemporaryDirectory("profile-process")
        // The stand-in holds AuthService's key pair, as the real one would.
        let auth = try AuthStandIn(
            context: zmq, directory: directory,
            security: try Cluster.security(dataDirectory: directory, context: zmq, name: "auth"))
        auth.answerLookups(answerLookups)
        let cluster = Cluster(dataDirectory: directory, extraEnvironment: auth.producer.environment(prefix: "AUTH"))
        try await startProfile(cluster)
        let harness = ProfileProcessHarness(
            zmq: zmq, auth: auth, cluster: cluster, profile: try cluster.client("profile", context: zmq))
        try await waitUntilReachable(harness.profile, timeoutMs: 60_000)
        return harness
    }

    deinit {
        profile.shutdown()
        cluster.stopAll()
        auth.stop()
    }

    private static func startProfile(_ cluster: Cluster) async throws {
        let directory = cluster.dataDirectory
        _ = try await withDeadline(
            "ProfileService printed its ready line", seconds: 90,
            onTimeout: { killProcesses(loggingInto: directory) },
            operation: { try await cluster.start("profile") })
    }

    /// Starts ProfileService again (same data directory, same ports) and waits until it answers.
    func restart() async throws {
        try await Self.startProfile(cluster)
        try await waitUntilReachable(profile, timeoutMs: 60_000)
    }

    /// Stops ProfileService with SIGTERM and waits for it to exit.
    func stop() async throws {
        let cluster = self.cluster
        let directory = cluster.dataDirectory
        _ = try await withDeadline(
            "ProfileService exited after SIGTERM", seconds: 30,
            onTimeout: { killProcesses(loggingInto: directory) },
            operation: { await onThread { cluster.stop("profile") } })
    }

    /// Kills ProfileService with SIGKILL (a crash) and waits for it to exit.
    func crash() async {
        let cluster = self.cluster
        await onThread { cluster.kill("profile") }
    }

    /// The event subscriber counters ProfileService reports in `ops.ping`.
    func counter(_ name: String) async throws -> Int64 {
        try await profile.call(Ops.Ping.self, Empty(), timeoutMs: 10_000).counters[name] ?? 0
    }

    /// Reads ProfileService's database from outside (SQLite's WAL or PostgreSQL's MVCC let it
    /// run alongside the service).
    func readDatabase<T>(_ body: (DatabaseConnection) throws -> T) throws -> T {
        try body(try TestStorage.location(cluster.dataDirectory, "profile").connect())
    }
}

/// SIGKILLs every process whose stderr goes to a file in `directory` (the services a test
/// started there: `ServiceProcess` sends stderr to a log file in the data directory). Used only
/// when a bounded wait for a child ran out, so that no child outlives its test.
func killProcesses(loggingInto directory: String) {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for entry in entries {
        guard let pid = Int32(entry),
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/fd/2"),
            target.hasPrefix(directory + "/")
        else { continue }
        kill(pid, SIGKILL)
    }
}
