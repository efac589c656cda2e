import Foundation
import Harness
import Messages
import Synchronization
import Transport

/// `Benchmarks auth [--users N] [--logins N] [--validations N] [--concurrency N]`: starts the
/// real AuthService, registers users, then measures logins per second (argon2id-bound) and
/// token validations per second, each with many concurrent calls over ZeroMQ.
enum AuthBenchmark {
    static func run(_ options: [String]) async throws {
        func option(_ name: String, _ defaultValue: Int) -> Int {
            guard let i = options.firstIndex(of: name), i + 1 < options.count, let v = Int(options[i + 1])
            else {
                return defaultValue
            }
            return v
        }
        let users = option("--users", 16)
        let logins = option("--logins", 200)
        let validations = option("--validations", 50_000)
        let concurrency = option("--concurrency", 64)

        let cluster = Cluster()
        defer { cluster.stopAll() }
        try await cluster.start(["auth"])
        let context = ZMQContext()
        let client = try cluster.client("auth", context: context)
        try await waitUntilReachable(client)
        print(
            "auth benchmark: \(ProcessInfo.processInfo.activeProcessorCount) cores, concurrency \(concurrency)"
        )

        try await measure("register", count: users, concurrency: concurrency) { i in
            _ = try await client.call(
                Auth.Register.self,
                .init(email: "user\(i)@example.com", username: "user\(i)", password: "password-\(i)"),
                timeoutMs: 60_000)
        }
        let tokens = TokenList()
        try await measure("login", count: logins, concurrency: concurrency) { i in
            let u = i % users
            let reply = try await client.call(
                Auth.Login.self, .init(login: "user\(u)", password: "password-\(u)"), timeoutMs: 60_000)
            if i < users { tokens.append(reply.session.token) }
        }
        let valid = tokens.all
        try await measure("validate", count: validations, concurrency: concurrency) { i in
            _ = try await client.call(
                Auth.Validate.self, .init(token: valid[i % valid.count]), timeoutMs: 10_000)
        }
        client.shutdown()
    }

    /// Runs `operation(0..<count)` with `concurrency` callers and prints throughput and latency.
    @discardableResult
    static func measure(
        _ name: String, count: Int, concurrency: Int,
        _ operation: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> Double {
        let next = SharedCounter()
        let failures = SharedCounter()
        let start = DispatchTime.now().uptimeNanoseconds
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<min(concurrency, count) {
                group.addTask {
                    var mine: [Double] = []
                    while true {
                        let i = next.increment()
                        guard i < count else { return mine }
                        let t0 = DispatchTime.now().uptimeNanoseconds
                        do { try await operation(i) } catch { _ = failures.increment() }
                        mine.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
                    }
                }
            }
            return try await group.reduce(into: [Double]()) { $0 += $1 }.sorted()
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let rate = Double(count) / seconds
        func p(_ q: Double) -> String {
            String(format: "%.1f", latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))])
        }
        print(
            String(format: "%@: %d calls in %.2f s = %.1f/s", name, count, seconds, rate)
                + "  latency ms p50 \(p(0.5)) p99 \(p(0.99)) max \(p(1))  errors \(failures.value)")
        return rate
    }
}

/// An atomic counter shared by benchmark tasks.
final class SharedCounter: Sendable {
    private let atomic = Atomic<Int>(0)
    /// Adds one; returns the value before.
    func increment() -> Int { atomic.add(1, ordering: .relaxed).oldValue }
    var value: Int { atomic.load(ordering: .relaxed) }
}

/// Tokens collected by concurrent logins.
final class TokenList: Sendable {
    private let tokens = Mutex<[String]>([])
    func append(_ token: String) { tokens.withLock { $0.append(token) } }
    var all: [String] { tokens.withLock { $0 } }
}
