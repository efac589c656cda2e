import Foundation
import Harness
import Messages
import Support
import Synchronization
import Transport

/// `Benchmarks profile [--users N] [--reads N] [--posts N] [--likes N] [--concurrency N]`
///
/// Starts the real AuthService and ProfileService, registers `--users` (20) accounts the way
/// the gateway does (`auth.register`, then `profile.create`), then prints:
/// - profile reads per second: `--reads` (50,000) `profile.header` requests for random users;
/// - post creations per second: `--posts` (10,000) `profile.create_post` requests, each tagging
///   one other user (validation, tag resolution, the post, its tag and the outbox event);
/// - grid reads per second: `profile.list_posts` first pages of 20 posts (`--reads` / 5);
/// - likes written per second: `--likes` (20,000) `profile.set_like` requests, each a new
///   (user, post) pair (the like, the post's count and the outbox event, group-committed).
/// The services run on SQLite, or on PostgreSQL with `TEST_STORAGE_ENGINE=postgres` (a server
/// started for the run; `scripts/bench storage` runs both).
/// Requests are sent by `--concurrency` (64) tasks sharing one RPC client each way.
enum ProfileBenchmark {
    static func run(_ options: [String]) async throws {
        func option(_ name: String, _ fallback: Int) -> Int {
            guard let i = options.firstIndex(of: name), i + 1 < options.count, let v = Int(options[i + 1]) else {
                return fallback
            }
            return v
        }
        let userCount = max(2, option("--users", 20))
        let reads = option("--reads", 50_000)
        let posts = option("--posts", 10_000)
        let likes = option("--likes", 20_000)
        let concurrency = option("--concurrency", 64)

        let cluster = Cluster(extraEnvironment: ["LOG_LEVEL": "warning"])
        try await cluster.start(["auth", "profile"])
        defer { cluster.stopAll() }
        let context = ZMQContext()
        let auth = try cluster.client("auth", context: context)
        let profile = try cluster.client("profile", context: context)
        try await waitUntilReachable(auth)
        try await waitUntilReachable(profile)
        print("profile benchmark: \(userCount) users, \(reads) header reads, \(posts) posts, concurrency \(concurrency)")

        var users: [Me] = []
        for i in 0..<userCount {
            let reply = try await auth.call(
                Auth.Register.self, .init(email: "bench\(i)@example.com", username: "bench\(i)", password: "password-123"),
                timeoutMs: 30_000)
            users.append(
                try await profile.call(
                    Profile.CreateProfile.self, .init(identity: reply.identity, name: "Bench \(i)", birthDate: nil, gender: nil)))
        }
        let all = users

        /// Runs `total` operations over `concurrency` tasks; returns operations per second.
        func measure(_ total: Int, _ operation: @escaping @Sendable (Int) async throws -> Void) async throws -> (Double, Double) {
            let next = ProfileBenchCounter()
            let start = Date()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        while true {
                            let i = next.value.add(1, ordering: .relaxed).oldValue
                            guard i < total else { return }
                            try await operation(i)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let seconds = Date().timeIntervalSince(start)
            return (Double(total) / seconds, seconds)
        }

        let postIds = Locked([String](repeating: "", count: posts))
        let (created, createSeconds) = try await measure(posts) { i in
            let owner = all[i % all.count]
            let tagged = all[(i + 1) % all.count].username
            let post = try await profile.call(
                Profile.CreatePost.self,
                .init(
                    ownerId: owner.id, postType: "photo", mediaURL: "https://cdn.example.com/m/\(i).jpg",
                    thumbnailURL: "https://cdn.example.com/t/\(i).jpg", caption: "post \(i)", taggedUsernames: [tagged]),
                timeoutMs: 30_000)
            postIds.withLock { $0[i] = post.id }
        }
        print(String(format: "post creations:  %8.0f /s  (%d in %.2f s)", created, posts, createSeconds))

        let (headerRate, headerSeconds) = try await measure(reads) { i in
            _ = try await profile.call(Profile.Header.self, .init(username: all[i % all.count].username), timeoutMs: 30_000)
        }
        print(String(format: "profile reads:   %8.0f /s  (%d profile.header in %.2f s)", headerRate, reads, headerSeconds))

        let gridReads = max(1, reads / 5)
        let (gridRate, gridSeconds) = try await measure(gridReads) { i in
            let user = all[i % all.count]
            _ = try await profile.call(
                Profile.ListPosts.self,
                .init(viewerId: user.id, username: all[(i + 3) % all.count].username, tagged: false, page: .init()),
                timeoutMs: 30_000)
        }
        print(String(format: "grid pages:      %8.0f /s  (%d pages of 20 posts in %.2f s)", gridRate, gridReads, gridSeconds))

        let ids = postIds.get()
        let likeCount = min(likes, ids.count * all.count)
        let (likeRate, likeSeconds) = try await measure(likeCount) { i in
            _ = try await profile.call(
                Profile.SetLike.self,
                .init(userId: all[i % all.count].id, postId: ids[(i / all.count) % ids.count], liked: true),
                timeoutMs: 30_000)
        }
        print(String(format: "likes written:   %8.0f /s  (%d profile.set_like in %.2f s)", likeRate, likeCount, likeSeconds))
        auth.shutdown()
        profile.shutdown()
    }
}

/// A shared counter handing out operation indices to the benchmark's tasks.
private final class ProfileBenchCounter: Sendable {
    let value = Atomic<Int>(0)
}
