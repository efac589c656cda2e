import Foundation
import Harness
import Messages
import ServiceKit
import Support
import Transport
import Wire

/// `Benchmarks erasure [--followers N] [--following N] [--batch N]`
///
/// Starts the real NotificationService against in-process fake AuthService and ProfileService
/// producers, gives one user `--followers` (1,000,000) followers through
/// `notification.import_follows` (10,000 a request) and `--following` (1,000) followees, then
/// erases that user as the deletion saga does (`profile.account.erased` from the ProfileService
/// stand-in) and prints the erasure's total time (from the event's commit until the service
/// counts the erasure done), its batches and the longest batch (the statements of one write
/// transaction, ms), from the service's `accounts.*` counters. `--batch` sets
/// `NOTIFICATION_ERASURE_BATCH` (default 500). The engine is `TEST_STORAGE_ENGINE`'s (SQLite
/// unless `postgres`).
enum ErasureBenchmark {
    static func run(_ options: [String]) async throws {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = options.firstIndex(of: name), i + 1 < options.count, let v = Int(options[i + 1]) else {
                return fallback
            }
            return v
        }
        let followers = option("--followers", 1_000_000)
        let following = option("--following", 1_000)
        let batch = option("--batch", 500)
        let say = NotificationBenchmark.say

        let context = ZMQContext()
        let dir = makeTemporaryDirectory("erasure-bench")
        func security(_ name: String) throws -> TransportSecurity {
            try Cluster.security(dataDirectory: dir, environment: Cluster.inherited, context: context, name: name)
        }
        let auth = try FakeAuth(context: context, directory: dir, answersLookups: false, security: try security("auth"))
        let profile = try FakeProducer(name: "profile", context: context, directory: dir, security: try security("profile"))
        try auth.start()
        try profile.start()
        let cluster = Cluster(
            dataDirectory: dir,
            extraEnvironment: auth.environment().merging(profile.environment(prefix: "PROFILE")) { $1 }
                .merging([
                    "LOG_LEVEL": ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "warning", "ALLOW_IMPORTS": "1",
                    "NOTIFICATION_ERASURE_BATCH": "\(batch)",
                ]) {
                    $1
                })
        try await cluster.start("notification")
        let client = try cluster.client("notification", context: context)
        try await waitUntilReachable(client)
        defer {
            cluster.stopAll()
            auth.stop()
            profile.stop()
        }
        let engine = ProcessInfo.processInfo.environment["TEST_STORAGE_ENGINE"] ?? "sqlite"
        say("erasure benchmark (\(engine)): \(followers) followers, \(following) followees, batches of \(batch)")

        var t0 = Date()
        let star = try await auth.register("star")
        let count = max(followers, following)
        let names = (0..<count).map { "user\($0)" }
        for chunk in stride(from: 0, to: names.count, by: 5_000) {
            try await auth.register(Array(names[chunk..<min(chunk + 5_000, names.count)]))
        }
        let users = names.map { Identity(id: "u-\($0)", username: $0, email: "", version: 1) }
        while (try? await client.call(Notifications.Header.self, .init(viewerId: star.id, username: names.last!))) == nil {
            try await Task.sleep(for: .milliseconds(50))
        }
        say(String(format: "users replicated:   %d in %.1f s", count + 1, Date().timeIntervalSince(t0)))

        t0 = Date()
        for chunk in stride(from: 0, to: followers, by: Notifications.ImportFollows.maxFollowers) {
            _ = try await client.call(
                Notifications.ImportFollows.self,
                .init(
                    followeeId: star.id,
                    followerIds: users[chunk..<min(chunk + Notifications.ImportFollows.maxFollowers, followers)].map(\.id),
                    notifyPosts: true),
                timeoutMs: 120_000)
        }
        for user in users.prefix(following) {
            _ = try await client.call(
                Notifications.Follow.self, .init(followerId: star.id, username: user.username, notifyPosts: false))
        }
        let header = try await client.call(Notifications.Header.self, .init(viewerId: star.id, username: star.username))
        say(
            String(
                format: "graph:              %d followers, %d following in %.1f s", header.followers, header.following,
                Date().timeIntervalSince(t0)))

        let before = try await client.call(Ops.Ping.self, Empty()).counters
        t0 = Date()
        _ = try await profile.emit(Profile.AccountErased(userId: star.id))
        var counters = before
        while counters["accounts.erase.done", default: 0] <= before["accounts.erase.done", default: 0] {
            try await Task.sleep(for: .milliseconds(100))
            counters = try await client.call(Ops.Ping.self, Empty()).counters
        }
        let seconds = Date().timeIntervalSince(t0)
        let batches = counters["accounts.batches", default: 0] - before["accounts.batches", default: 0]
        let rows = counters["accounts.rows", default: 0] - before["accounts.rows", default: 0]
        say(
            String(
                format:
                    "erasure:            %.2f s, %d batches, %d rows, longest batch %.1f ms (statements), %.1f ms (queued to commit)",
                seconds, batches, rows, Double(counters["accounts.longest_batch_us", default: 0]) / 1_000,
                Double(counters["accounts.longest_write_us", default: 0]) / 1_000))
        let after = try await client.call(
            Notifications.Header.self, .init(viewerId: users[0].id, username: users[0].username))
        say("a follower's following after: \(after.following)")
    }
}
