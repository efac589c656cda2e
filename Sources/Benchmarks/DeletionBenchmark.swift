import CSodium
import Foundation
import Harness
import Messages
import ServiceKit
import Support
import Synchronization
import Transport
import Wire

/// `Benchmarks deletion [--followers N] [--posts N] [--likers N] [--owners N] [--clients N]
/// [--rate N] [--baseline S] [--max-load S] [--batch N]`
///
/// Other users' like latency before and during an account deletion, in one run. Starts the
/// real AuthService, ProfileService and NotificationService (`ALLOW_IMPORTS=1`), imports
/// `--followers` (1,000,000) users (`auth.import_users`, one argon2id hash for all; ProfileService
/// and NotificationService get them through `auth.users.imported`), registers the victim, makes
/// every imported user follow it (`notification.import_follows`, without post notifications;
/// ProfileService's graph replica gets them through `notification.follows.imported`) and has it
/// publish `--posts` (10,000) posts (`profile.create_post`, 32 at a time). `--owners` (100) other
/// users publish a post each. Then `--clients` (16) tasks like those posts without pause
/// (`profile.set_like`, the RPC the gateway's `PUT /v1/posts/{id}/like` makes), each a new
/// (liker, post) pair among the first `--likers` (2,000) users (an unlike once every pair is
/// taken), and the latency of every like is kept. With `--rate` (0: unpaced) the likes are paced
/// at that many a second in all, each timed from when it was due (as LoadTest's `likes` does), so
/// a stall shows in full:
/// - phase A: `--baseline` (5) seconds of likes alone (after one second of warm-up);
/// - phase B: the victim's deletion as the gateway's `DELETE /v1/me` starts it
///   (`auth.delete_account` with the password, then `profile.apply_account_state` and
///   `notification.apply_account_state`), the same likes going on until the saga is done (the
///   account row is gone from AuthService, `auth.account_states` no longer names it), or for
///   `--max-load` (600) seconds at most: then the likes stop and the deletion is awaited alone
///   (NotificationService reads ProfileService's events in order, so on an engine where it
///   applies like events more slowly than they come the saga's next event waits behind them).
///
/// Prints the setup's times, the deletion's (to the 202, to done, and each service's
/// `erasure.finished` / `account.deleted` from its log: total, batches, longest batch), and for
/// each phase the likes' p50, p99, max and rate, with the ratios B / A. `--batch` sets
/// `PROFILE_ERASURE_BATCH` and `NOTIFICATION_ERASURE_BATCH` (default 500). The engine is
/// `TEST_STORAGE_ENGINE`'s (SQLite unless `postgres`). Figures: docs/account-lifecycle.md.
enum DeletionBenchmark {
    static let password = "bench-password-123"

    static func run(_ options: [String]) async throws {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = options.firstIndex(of: name), i + 1 < options.count, let v = Int(options[i + 1]) else {
                return fallback
            }
            return v
        }
        let followers = max(2, option("--followers", 1_000_000))
        let posts = option("--posts", 10_000)
        let likers = max(1, min(option("--likers", 2_000), followers))
        let owners = max(1, min(option("--owners", 100), followers))
        let clients = max(1, option("--clients", 16))
        // Likes a second in all (0: each client as fast as it can), and B's longest stretch.
        let rate = Double(max(0, option("--rate", 0)))
        let maxLoad = Double(max(1, option("--max-load", 600)))
        let baseline = Double(max(1, option("--baseline", 5)))
        let batch = option("--batch", 500)
        let say = NotificationBenchmark.say
        let engine = ProcessInfo.processInfo.environment["TEST_STORAGE_ENGINE"] ?? "sqlite"

        let cluster = Cluster(extraEnvironment: [
            "LOG_LEVEL": ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "info", "ALLOW_IMPORTS": "1",
            "PROFILE_ERASURE_BATCH": "\(batch)",
            "NOTIFICATION_ERASURE_BATCH": "\(batch)",
        ])
        try await cluster.start(["auth", "profile", "notification"])
        defer { cluster.stopAll() }
        let context = ZMQContext()
        let auth = try cluster.client("auth", context: context)
        let profile = try cluster.client("profile", context: context)
        let notification = try cluster.client("notification", context: context)
        for client in [auth, profile, notification] { try await waitUntilReachable(client) }
        say(
            "deletion benchmark (\(engine)): victim with \(followers) followers and \(posts) posts; "
                + "\(clients) clients liking \(owners) other users' posts; erasure batches of \(batch)")

        // Users: imported, one hash for all.
        var t0 = Date()
        let hash = try passwordHash(password)
        let size = Auth.ImportUsers.maxUsers
        let ranges = stride(from: 0, to: followers, by: size).map { $0..<min(followers, $0 + size) }
        var imported = [String](repeating: "", count: followers)
        try await withThrowingTaskGroup(of: (Range<Int>, [String]).self) { group in
            var next = 0
            func launch() {
                let range = ranges[next]
                next += 1
                group.addTask {
                    let users = range.map { Auth.ImportUsers.User(username: "fan_\($0)", email: "fan_\($0)@bench.example") }
                    let reply = try await auth.call(
                        Auth.ImportUsers.self, .init(passwordHash: hash, users: users), timeoutMs: 300_000)
                    return (range, reply.users.map(\.id))
                }
            }
            while next < min(2, ranges.count) { launch() }
            while let (range, got) = try await group.next() {
                imported.replaceSubrange(range, with: got)
                if next < ranges.count { launch() }
            }
        }
        let ids = imported
        let registered = try await auth.call(
            Auth.Register.self, .init(email: "victim@bench.example", username: "victim", password: password),
            timeoutMs: 60_000)
        let victim = registered.identity
        _ = try await profile.call(
            Profile.CreateProfile.self, .init(identity: victim, name: "Victim", birthDate: nil, gender: nil),
            timeoutMs: 60_000)
        say(String(format: "users imported:     %d in %.1f s", followers, Date().timeIntervalSince(t0)))
        t0 = Date()
        try await waitForReplicas(of: auth, "auth", in: [profile, notification])
        say(String(format: "users replicated:   in %.1f s more", Date().timeIntervalSince(t0)))

        // The victim's followers and posts.
        t0 = Date()
        let followChunks = stride(from: 0, to: followers, by: Notifications.ImportFollows.maxFollowers).map {
            Array(ids[$0..<min(followers, $0 + Notifications.ImportFollows.maxFollowers)])
        }
        try await forEach(followChunks.count, concurrency: 2) { i in
            _ = try await notification.call(
                Notifications.ImportFollows.self,
                .init(followeeId: victim.id, followerIds: followChunks[i], notifyPosts: false), timeoutMs: 300_000)
        }
        let header = try await notification.call(
            Notifications.Header.self, .init(viewerId: victim.id, username: victim.username))
        say(String(format: "follows imported:   %d in %.1f s", header.followers, Date().timeIntervalSince(t0)))
        t0 = Date()
        try await waitForReplicas(of: notification, "notification", in: [profile])
        say(String(format: "graph replicated:   in %.1f s more (ProfileService)", Date().timeIntervalSince(t0)))
        t0 = Date()
        try await forEach(posts, concurrency: 32) { i in
            _ = try await profile.call(
                Profile.CreatePost.self,
                .init(
                    ownerId: victim.id, postType: "photo", mediaURL: "https://cdn.example.com/m/v\(i).jpg",
                    thumbnailURL: "https://cdn.example.com/t/v\(i).jpg", caption: "victim's post \(i)", taggedUsernames: []),
                timeoutMs: 60_000)
        }
        say(String(format: "victim's posts:     %d in %.1f s", posts, Date().timeIntervalSince(t0)))
        let targets = Locked([String](repeating: "", count: owners))
        try await forEach(owners, concurrency: 16) { i in
            let owner = ids[followers - 1 - i]
            let post = try await profile.call(
                Profile.CreatePost.self,
                .init(
                    ownerId: owner, postType: "photo", mediaURL: "https://cdn.example.com/m/o\(i).jpg",
                    thumbnailURL: "https://cdn.example.com/t/o\(i).jpg", caption: "other post \(i)", taggedUsernames: []),
                timeoutMs: 60_000)
            targets.withLock { $0[i] = post.id }
        }
        try await waitForReplicas(of: profile, "profile", in: [notification])

        // The like load, from now until the deletion is done.
        let postIds = targets.get()
        let likerIds = Array(ids.prefix(likers))
        let next = DeletionBenchCounter()
        let stop = DeletionBenchCounter()
        let origin = ContinuousClock.now
        let load = Task {
            try await withThrowingTaskGroup(of: [Sample].self) { group in
                for _ in 0..<clients {
                    group.addTask {
                        var samples: [Sample] = []
                        while stop.value.load(ordering: .relaxed) == 0 {
                            let i = next.value.add(1, ordering: .relaxed).oldValue
                            let pairs = likerIds.count * postIds.count
                            let pair = i % pairs
                            var began = ContinuousClock.now
                            if rate > 0 {
                                // Paced: timed from when the like was due (a late send counts).
                                let due = origin + .seconds(Double(i) / rate)
                                if due > began { try await Task.sleep(until: due) }
                                began = due
                            }
                            var ok = true
                            do {
                                _ = try await profile.call(
                                    Profile.SetLike.self,
                                    .init(
                                        userId: likerIds[pair % likerIds.count], postId: postIds[pair / likerIds.count],
                                        liked: (i / pairs) % 2 == 0),
                                    timeoutMs: 30_000)
                            } catch {
                                ok = false
                            }
                            let ended = ContinuousClock.now
                            samples.append(Sample(start: seconds(began - origin), ms: seconds(ended - began) * 1_000, ok: ok))
                        }
                        return samples
                    }
                }
                var all: [Sample] = []
                for try await samples in group { all += samples }
                return all
            }
        }
        try await Task.sleep(for: .seconds(1 + baseline))
        let deletionStart = ContinuousClock.now
        let reply = try await auth.call(
            Auth.DeleteAccount.self, .init(userId: victim.id, password: password), timeoutMs: 60_000)
        let state = AccountStateRequest(userId: victim.id, state: reply.status, version: reply.version)
        async let toProfile = profile.call(Profile.ApplyAccountState.self, state, timeoutMs: 60_000)
        async let toNotification = notification.call(Notifications.ApplyAccountState.self, state, timeoutMs: 60_000)
        _ = try await (toProfile, toNotification)
        let accepted = ContinuousClock.now
        func deleted() async throws -> Bool {
            try await auth.call(Auth.AccountStates.self, .init(userIds: [victim.id])).states[victim.id] == nil
        }
        var gone = try await deleted()
        while !gone && ContinuousClock.now - deletionStart < .seconds(maxLoad) {
            try await Task.sleep(for: .milliseconds(100))
            gone = try await deleted()
        }
        // B ends when the deletion is done, or after --max-load s (the likes stop; the deletion
        // is then awaited alone).
        let loadEnd = ContinuousClock.now
        stop.value.store(1, ordering: .relaxed)
        let samples = try await load.value
        while try await !deleted() { try await Task.sleep(for: .milliseconds(100)) }
        let done = ContinuousClock.now

        let a = Phase(samples, from: 1, to: 1 + baseline)
        let b = Phase(samples, from: seconds(deletionStart - origin), to: seconds(loadEnd - origin))
        say(
            String(
                format: "deletion:           202 after %.0f ms, done (account row gone) after %.1f s",
                seconds(accepted - deletionStart) * 1_000, seconds(done - deletionStart)))
        for (name, service, event) in [
            ("ProfileService", "profile", "erasure.finished"), ("NotificationService", "notification", "erasure.finished"),
            ("AuthService", "auth", "account.deleted"),
        ] {
            let line = logLine(cluster, service, event, victim.id)
            say("  \(name.padding(toLength: 20, withPad: " ", startingAt: 0))\(line ?? "(no \(event) in its log)")")
        }
        if !gone {
            say(String(format: "  (the likes stopped after --max-load %.0f s, before the deletion was done)", maxLoad))
        }
        say("likes by \(clients) clients" + (rate > 0 ? String(format: ", paced at %.0f/s", rate) : ", unpaced") + ":")
        say("phase                      count   errors    rate/s   p50 ms   p99 ms   max ms")
        say(a.row("A: before (\(Int(baseline)) s)"))
        say(b.row(String(format: "B: during (%.1f s)", b.seconds)))
        say(
            String(
                format: "B / A:                                  %8.2f %8.2f %8.2f %8.2f", b.rate / a.rate, b.p50 / a.p50,
                b.p99 / a.p99, b.max / a.max))
    }

    /// One like: when it started (seconds since the load began), how long it took, whether it
    /// succeeded.
    struct Sample: Sendable {
        var start: Double
        var ms: Double
        var ok: Bool
    }

    /// The likes that started in one window.
    struct Phase {
        var seconds: Double
        var count = 0
        var errors = 0
        var p50 = 0.0
        var p99 = 0.0
        var max = 0.0
        var rate: Double { Double(count) / Swift.max(seconds, 0.001) }

        init(_ samples: [Sample], from: Double, to: Double) {
            seconds = to - from
            let inside = samples.filter { $0.start >= from && $0.start < to }
            errors = inside.count { !$0.ok }
            let ms = inside.filter(\.ok).map(\.ms).sorted()
            count = ms.count
            guard !ms.isEmpty else { return }
            p50 = ms[ms.count / 2]
            p99 = ms[Swift.min(ms.count - 1, ms.count * 99 / 100)]
            max = ms[ms.count - 1]
        }

        func row(_ label: String) -> String {
            label.padding(toLength: 24, withPad: " ", startingAt: 0)
                + String(format: "%8d %8d %9.0f %8.2f %8.2f %8.1f", count, errors, rate, p50, p99, max)
        }
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// Runs `operation(0..<count)` by `concurrency` tasks.
    static func forEach(
        _ count: Int, concurrency: Int, _ operation: @escaping @Sendable (Int) async throws -> Void
    ) async throws {
        let next = DeletionBenchCounter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    while true {
                        let i = next.value.add(1, ordering: .relaxed).oldValue
                        guard i < count else { return }
                        try await operation(i)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Waits until every one of `consumers` has applied `producer`'s events up to its outbox's
    /// head now (its `subscriber.<name>.cursor` counter).
    static func waitForReplicas(of producer: RPCClient, _ name: String, in consumers: [RPCClient]) async throws {
        let head = try await producer.call(Ops.Replay.self, .init(after: 0, limit: 0), timeoutMs: 60_000).head
        for consumer in consumers {
            let deadline = Date().addingTimeInterval(3_600)
            while try await consumer.call(Ops.Ping.self, Empty(), timeoutMs: 60_000).counters[
                "subscriber.\(name).cursor", default: 0] < head
            {
                guard Date() < deadline else { throw TestSupportError("\(consumer.service) did not apply \(name)'s events") }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// The figures of `service`'s log line `event` about `userId` (`total_ms`, `took_ms`,
    /// `batches`, `rows`, `longest_batch_ms`), or nil.
    static func logLine(_ cluster: Cluster, _ service: String, _ event: String, _ userId: String) -> String? {
        guard let path = cluster.processes[service]?.logPath,
            let text = try? String(contentsOfFile: path, encoding: .utf8),
            let line = text.split(separator: "\n").last(where: { $0.contains(event) && $0.contains(userId) })
        else { return nil }
        let fields = ["total_ms", "took_ms", "batches", "rows", "longest_batch_ms"].compactMap { key -> String? in
            guard let range = line.range(of: "\"\(key)\":\"") ?? line.range(of: "\(key)=") else { return nil }
            let value = line[range.upperBound...].prefix { $0.isNumber || $0 == "." }
            return "\(key)=\(value)"
        }
        return "\(event) " + fields.joined(separator: " ")
    }

    /// libsodium's argon2id PHC string of `password` with AuthService's parameters (t = 2,
    /// 19 MiB), for `auth.import_users`.
    static func passwordHash(_ password: String) throws -> String {
        guard sodium_init() >= 0 else { throw TestSupportError("sodium_init failed") }
        var out = [CChar](repeating: 0, count: crypto_pwhash_strbytes())
        let rc = crypto_pwhash_str_alg(
            &out, password, UInt64(password.utf8.count), 2, 19 * 1024 * 1024, crypto_pwhash_alg_argon2id13())
        guard rc == 0 else { throw TestSupportError("argon2id hashing failed") }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A shared counter (the next operation's index, or the stop flag).
private final class DeletionBenchCounter: Sendable {
    let value = Atomic<Int>(0)
}
