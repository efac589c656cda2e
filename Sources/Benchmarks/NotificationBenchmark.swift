import Foundation
import Harness
import Messages
import ServiceKit
import Support
import Synchronization
import Transport
import Wire

/// `Benchmarks notification [--followers N] [--small N] [--likes N] [--group-likes N] [--concurrency N] [--import-big]
/// [--mutes N] [--blocks N]`
///
/// Starts the real NotificationService against in-process fake AuthService and ProfileService
/// producers (users arrive as `auth.user.registered` events, so no argon2 cost) and prints:
/// follows per second (`notification.follow` RPCs, each also storing a follow notification),
/// notifications written per second (from a burst of `profile.post.liked` events), and the time
/// to fan one post out to `--small` (10,000) and `--followers` (100,000) followers with
/// notifyPosts, measured from the `profile.post.created` commit to the last
/// notification received on the service's delivery socket (subscribed to every recipient), with the worst latency of a
/// `notification.header` request answered meanwhile; and a page of notification groups and the
/// unread count of a recipient with `--group-likes` (1,000,000; 0: skipped) like notifications
/// beside one with 10 (p50, p99 and the ratio of the p50s). With `--import-big` the big star's
/// followers arrive through `notification.import_follows` (10,000 a request) and follows per
/// second are measured on the small star's alone (what `scripts/bench storage` runs, so that an
/// engine whose follow RPCs are slow still reaches the fan-out in minutes). With `--mutes N`
/// and `--blocks N`, N of the big star's followers then mute it and N block it (each timed),
/// the star blocks 10 of its followers, and it posts again: the second fan-out, beside the
/// first in the same run, shows what the mutes and blocks cost it.
enum NotificationBenchmark {
    /// Prints one line unbuffered (so figures show at once, also through a pipe).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Write system calls (`syscw`) and bytes passed to them (`wchar`) by process `pid`, from
    /// `/proc/<pid>/io` (proc(5)); nil when unreadable.
    static func writeCounters(_ pid: Int32) -> (calls: Int, bytes: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        var fields: [Substring: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":")
            if parts.count == 2 { fields[parts[0]] = Int(parts[1].trimmingCharacters(in: .whitespaces)) }
        }
        guard let calls = fields["syscw"], let bytes = fields["wchar"] else { return nil }
        return (calls, bytes)
    }

    static func run(_ options: [String]) async throws {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = options.firstIndex(of: name), i + 1 < options.count, let v = Int(options[i + 1])
            else {
                return fallback
            }
            return v
        }
        let big = option("--followers", 100_000)
        let small = option("--small", 10_000)
        let likes = option("--likes", 20_000)
        let concurrency = option("--concurrency", 256)
        let groupLikes = option("--group-likes", 1_000_000)
        let importBig = options.contains("--import-big")
        // Privacy and safety: after the plain fan-outs, this many of star.big's followers mute it
        // and as many block it (a block ends their follow), and it posts again.
        let mutes = option("--mutes", 0)
        let blocks = option("--blocks", 0)

        let context = ZMQContext()
        let dir = makeTemporaryDirectory("notification-bench")
        // The stand-ins hold AuthService's and ProfileService's key pairs (CURVE, as the real ones).
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
                    "LOG_LEVEL": "warning", "ALLOW_IMPORTS": "1",  // --import-big: notification.import_follows
                ]) { $1 })
        try await cluster.start("notification")
        let client = try cluster.client("notification", context: context)
        try await waitUntilReachable(client)
        defer {
            cluster.stopAll()
            auth.stop()
            profile.stop()
        }
        say(
            "notification benchmark: \(big) + \(small) followers, \(likes) likes, concurrency \(concurrency)"
        )

        // Users, through the replica's event feed.
        let followerCount = max(big, small, likes)
        var t0 = Date()
        let stars = try await auth.register(["star.big", "star.small"])
        let (starBig, starSmall) = (stars[0], stars[1])
        let names = (0..<followerCount).map { "user\($0)" }
        for chunk in stride(from: 0, to: names.count, by: 5_000) {
            try await auth.register(Array(names[chunk..<min(chunk + 5_000, names.count)]))
        }
        let users = names.map { Identity(id: "u-\($0)", username: $0, email: "", version: 1) }
        while (try? await client.call(
            Notifications.Header.self, .init(viewerId: starBig.id, username: names.last!))) == nil
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        say(
            String(
                format: "users replicated:        %d in %.2f s", followerCount + 2,
                Date().timeIntervalSince(t0)))

        // Follows.
        func follow(_ followers: ArraySlice<Identity>, _ star: Identity) async throws -> Double {
            let next = Counter(followers.startIndex)
            let end = followers.endIndex
            let start = Date()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        while true {
                            let i = next.value.add(1, ordering: .relaxed).oldValue
                            guard i < end else { return }
                            _ = try await client.call(
                                Notifications.Follow.self,
                                .init(followerId: followers[i].id, username: star.username, notifyPosts: true),
                                timeoutMs: 30_000)
                        }
                    }
                }
                try await group.waitForAll()
            }
            return Date().timeIntervalSince(start)
        }
        let smallSeconds = try await follow(users[0..<small], starSmall)
        if importBig {
            let importStart = Date()
            for chunk in stride(from: 0, to: big, by: Notifications.ImportFollows.maxFollowers) {
                _ = try await client.call(
                    Notifications.ImportFollows.self,
                    .init(
                        followeeId: starBig.id,
                        followerIds: users[chunk..<min(chunk + Notifications.ImportFollows.maxFollowers, big)].map(\.id),
                        notifyPosts: true),
                    timeoutMs: 120_000)
            }
            say(
                String(
                    format: "follows:                 %.0f /s  (%d follows in %.2f s; %d more imported in %.2f s)",
                    Double(small) / smallSeconds, small, smallSeconds, big, Date().timeIntervalSince(importStart)))
        } else {
            let bigSeconds = try await follow(users[0..<big], starBig)
            let follows = Double(small + big) / (smallSeconds + bigSeconds)
            say(
                String(
                    format: "follows:                 %.0f /s  (%d follows in %.2f s)", follows, small + big,
                    smallSeconds + bigSeconds))
        }
        let header = try await client.call(
            Notifications.Header.self, .init(viewerId: starBig.id, username: starBig.username))
        say("star.big followers:      \(header.followers)")

        // Count delivered notifications from now on: one subscriber to every recipient's topic
        // (a gateway subscribes only to its streams' recipients; this is the whole delivery).
        let received = Counter(0)
        let welcomed = Counter(0)
        let subscriber = TopicSubscriber(
            name: "bench.delivery", context: context, endpoints: [cluster.endpoints["notification"]!["delivery"]!],
            service: "notification", logger: Logger(service: "bench", minimum: .error),
            security: try cluster.security(context: context)
        ) { items in
            for item in items {
                switch item {
                case .message: received.value.add(1, ordering: .relaxed)
                case .welcome: welcomed.value.store(1, ordering: .relaxed)
                }
            }
        }
        subscriber.subscribe(Array("n".utf8))
        let subscription = Task { try await subscriber.run() }
        while welcomed.value.load(ordering: .relaxed) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        defer { subscription.cancel() }
        func waitFor(_ target: Int) async throws -> Date {
            let deadline = Date().addingTimeInterval(600)
            while received.value.load(ordering: .relaxed) < target && Date() < deadline {
                try await Task.sleep(for: .milliseconds(2))
            }
            return Date()
        }

        // Notifications written: a burst of like events, one notification each.
        var base = received.value.load(ordering: .relaxed)
        let servicePid = cluster.processes["notification"]?.pid
        let cpuBefore = servicePid.flatMap(ProcessCPU.milliseconds)
        let ioBefore = servicePid.flatMap(Self.writeCounters)
        t0 = Date()
        for chunk in stride(from: 0, to: likes, by: 5_000) {
            let slice = users[chunk..<min(chunk + 5_000, likes)]
            try await profile.write { tx in
                for u in slice {
                    try tx.emit(
                        Profile.PostLiked(
                            postId: "liked", ownerId: starSmall.id, userId: u.id,
                            thumbnailURL: "https://img.example/l.jpg"))
                }
            }
        }
        var done = try await waitFor(base + likes)
        let likeSeconds = done.timeIntervalSince(t0)
        say(
            String(
                format: "notifications written:   %.0f /s  (%d like notifications in %.2f s)",
                Double(likes) / likeSeconds, likes, likeSeconds))
        if let cpuBefore, let cpuAfter = servicePid.flatMap(ProcessCPU.milliseconds) {
            // The figure machine noise disturbs least: the service's CPU time over the burst.
            say(
                String(
                    format: "CPU per like written:    %.0f µs  (NotificationService, %.0f ms over the burst)",
                    (cpuAfter - cpuBefore) * 1000 / Double(likes), cpuAfter - cpuBefore))
        }
        if let ioBefore, let ioAfter = servicePid.flatMap(Self.writeCounters) {
            // Mostly SQLite's WAL: one pwrite per page a commit changed.
            say(
                String(
                    format: "writes per like written: %.2f write calls, %.0f bytes  (NotificationService)",
                    Double(ioAfter.calls - ioBefore.calls) / Double(likes),
                    Double(ioAfter.bytes - ioBefore.bytes) / Double(likes)))
        }

        // Groups and the badge: a page of groups and the unread count of a recipient with
        // `--group-likes` (1,000,000) like notifications (25 posts, 40,000 likers each at the
        // default) beside one with 10 (10 posts), and the ratio of their medians. A page of 20
        // holds 20 groups for the first and all 10 for the second; a page of 10 compares the
        // same number of groups.
        if groupLikes > 0 {
            let posts = 25
            let perPost = min(groupLikes / posts, users.count - 1)
            let heavy = users[users.count - 1]
            let light = users[users.count - 2]
            base = received.value.load(ordering: .relaxed)
            t0 = Date()
            var emitted = 0
            for post in 0..<posts {
                for chunk in stride(from: 0, to: perPost, by: 5_000) {
                    let slice = users[chunk..<min(chunk + 5_000, perPost)]
                    try await profile.write { tx in
                        for u in slice {
                            try tx.emit(
                                Profile.PostLiked(
                                    postId: "heavy\(post)", ownerId: heavy.id, userId: u.id,
                                    thumbnailURL: "https://img.example/h.jpg"))
                        }
                    }
                    emitted += slice.count
                }
            }
            try await profile.write { tx in
                for i in 0..<10 {
                    try tx.emit(
                        Profile.PostLiked(
                            postId: "light\(i)", ownerId: light.id, userId: users[i].id,
                            thumbnailURL: "https://img.example/l.jpg"))
                }
            }
            done = try await waitFor(base + emitted + 10)
            say(
                String(
                    format: "group likes written:     %d for one recipient in %.2f s (%.0f /s)", emitted,
                    done.timeIntervalSince(t0), Double(emitted) / done.timeIntervalSince(t0)))
            let written = emitted
            /// Median and 99th percentile of `n` calls of `call`, in ms.
            func timed(_ n: Int, _ call: () async throws -> Void) async throws -> (p50: Double, p99: Double) {
                var ms: [Double] = []
                for _ in 0..<n {
                    let start = DispatchTime.now().uptimeNanoseconds
                    try await call()
                    ms.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
                }
                ms.sort()
                return (ms[n / 2], ms[min(n - 1, n * 99 / 100)])
            }
            for (what, heavyCall, lightCall) in [
                (
                    "groups page (20)",
                    { @Sendable () async throws -> Void in
                        let page = try await client.call(
                            Notifications.ListGroups.self, .init(recipientId: heavy.id, page: .init(limit: 20)))
                        precondition(page.items.count == 20 && page.unreadCount == written)
                    },
                    { @Sendable () async throws -> Void in
                        let page = try await client.call(
                            Notifications.ListGroups.self, .init(recipientId: light.id, page: .init(limit: 20)))
                        precondition(page.items.count == 10 && page.unreadCount == 10)
                    }
                ),
                (
                    "groups page (10)",
                    { @Sendable () async throws -> Void in
                        let page = try await client.call(
                            Notifications.ListGroups.self, .init(recipientId: heavy.id, page: .init(limit: 10)))
                        precondition(page.items.count == 10)
                    },
                    { @Sendable () async throws -> Void in
                        let page = try await client.call(
                            Notifications.ListGroups.self, .init(recipientId: light.id, page: .init(limit: 10)))
                        precondition(page.items.count == 10)
                    }
                ),
                (
                    "unread count",
                    { @Sendable () async throws -> Void in
                        _ = try await client.call(Notifications.UnreadCount.self, .init(recipientId: heavy.id))
                    },
                    { @Sendable () async throws -> Void in
                        _ = try await client.call(Notifications.UnreadCount.self, .init(recipientId: light.id))
                    }
                ),
            ] {
                _ = try await timed(50, heavyCall)  // warm-up
                _ = try await timed(50, lightCall)
                let h = try await timed(500, heavyCall)
                let l = try await timed(500, lightCall)
                say(
                    String(
                        format:
                            "%@: %d notifications p50 %.2f ms p99 %.2f ms; 10 notifications p50 %.2f ms p99 %.2f ms; ratio %.2f",
                        what.padding(toLength: 16, withPad: " ", startingAt: 0), emitted, h.p50, h.p99, l.p50, l.p99,
                        h.p50 / l.p50))
            }
        }

        // Fan-out, with a probe measuring how other requests fare meanwhile.
        func fanOut(_ star: Identity, _ count: Int, _ postId: String) async throws {
            base = received.value.load(ordering: .relaxed)
            let probing = Counter(1)
            let probe = Task { () -> (Int, Int64) in
                var worst: Int64 = 0
                var n = 0
                while probing.value.load(ordering: .relaxed) == 1 {
                    let start = Timestamp.nowMs()
                    _ = try? await client.call(Notifications.Header.self, .init(viewerId: star.id, username: "user1"))
                    worst = max(worst, Timestamp.nowMs() - start)
                    n += 1
                    try? await Task.sleep(for: .milliseconds(5))
                }
                return (n, worst)
            }
            t0 = Date()
            try await profile.emit(
                Profile.PostCreated(
                    postId: postId, ownerId: star.id, thumbnailURL: "https://img.example/\(postId).jpg",
                    taggedUserIds: [],
                    createdAt: Timestamp.now()))
            done = try await waitFor(base + count)
            probing.value.store(0, ordering: .relaxed)
            let (probes, worst) = await probe.value
            let seconds = done.timeIntervalSince(t0)
            let got = received.value.load(ordering: .relaxed) - base
            say(
                String(
                    format:
                        "fan-out to %6d:        %.2f s  (%.0f notifications/s; %d received; %d header requests meanwhile, worst %d ms)",
                    count, seconds, Double(count) / seconds, got, probes, worst))
        }
        try await fanOut(starSmall, small, "post-small")
        try await fanOut(starBig, big, "post-big")
        if mutes + blocks > 0 {
            // The mutes and blocks, timed, with a probe of other requests meanwhile (a block of
            // or by an account with `big` followers touches only the pair's rows).
            func timed(_ label: String, _ n: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
                var worst = 0.0
                var total = 0.0
                for i in 0..<n {
                    let start = Date()
                    try await body(i)
                    let ms = Date().timeIntervalSince(start) * 1000
                    worst = max(worst, ms)
                    total += ms
                }
                say(
                    String(
                        format: "%@ %d in %.2f s (mean %.2f ms, worst %.1f ms)", label, n, total / 1000, total / Double(n), worst)
                )
            }
            let muting = users[0..<min(mutes, big)]
            let blocking = users[min(mutes, big)..<min(mutes + blocks, big)]
            try await timed("mutes of star.big:      ", muting.count) { i in
                _ = try await client.call(
                    Notifications.SetMute.self,
                    .init(userId: muting[muting.startIndex + i].id, username: starBig.username, muting: true))
            }
            try await timed("blocks of star.big:     ", blocking.count) { i in
                _ = try await client.call(
                    Notifications.SetBlock.self,
                    .init(userId: blocking[blocking.startIndex + i].id, username: starBig.username, blocking: true))
            }
            try await timed("blocks by star.big:     ", 10) { i in
                let target = users[big - 1 - i]
                _ = try await client.call(
                    Notifications.SetBlock.self, .init(userId: starBig.id, username: target.username, blocking: true))
            }
            try await fanOut(starBig, big - muting.count - blocking.count - 10, "post-big-muted")
        }
        let stats = subscriber.counters()
        say(
            "subscriber stats:        \(stats.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))"
        )
    }
}

/// An atomic integer shared between tasks.
private final class Counter: Sendable {
    let value: Atomic<Int>
    init(_ initial: Int) { value = Atomic(initial) }
}
