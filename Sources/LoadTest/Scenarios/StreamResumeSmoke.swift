import Foundation
import Harness
import Messages

/// The smoke run's reconnection check: a notification stream whose gateway is killed opens again
/// once the gateway is back and resumes with `Last-Event-ID`, missing nothing made while it was
/// down and repeating nothing (the behaviour the scenarios count on to measure the system, not the
/// tool, when a gateway dies under them).
///
/// User 1 posts and streams; user 2 likes the post over HTTP (seen live); the gateway is killed;
/// user 3 likes it through ProfileService directly (the only gateway is down); the gateway is
/// started again on its port; users 4 and 5 like it over HTTP. Every like must arrive exactly
/// once, the last one serving as a barrier: the stream is ordered, so a repeat of an earlier one
/// would come before it.
enum StreamResumeSmoke {
    /// - Returns: the failed checks (empty when all passed) and the number that passed.
    static func run(_ api: GatewayAPI, cluster: Cluster, population: Population, options: Options) async throws
        -> (failures: [String], passed: Int)
    {
        let pop = try await Setup.ensureTokens(api, population, [1, 2, 3, 4, 5], options: options, saving: false)
        var failures: [String] = []
        var passed = 0
        func check(_ ok: Bool, _ what: String) {
            if ok { passed += 1 } else { failures.append("stream resume: \(what)") }
        }
        let (postId, created) = await api.createPost(token: pop.users[1].token, caption: "lt-resume")
        guard let postId else { throw LoadTestError("stream resume: create post: HTTP \(created.status)") }
        let streams = try await StreamSet(api: api, population: pop, users: [1])
        defer { streams.close() }

        func like(_ user: Int) async -> Int {
            await api.call("PUT", "/v1/posts/\(postId)/like", token: pop.users[user].token).status
        }
        func key(_ user: Int) -> NotificationKey {
            NotificationKey(type: "like", postId: postId, actorId: pop.users[user].id)
        }
        func arrived(_ users: [Int], within seconds: Double) async throws -> Bool {
            let deadline = Clock.nowNs() + UInt64(seconds * 1e9)
            while Clock.nowNs() < deadline {
                let keys = Set(streams.events.map(\.key))
                if users.allSatisfy({ keys.contains(key($0)) }) { return true }
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            return false
        }

        check(await like(2) == 200, "a like over HTTP")
        check(try await arrived([2], within: 30), "its notification arrives on the stream")
        cluster.kill("gateway")
        let cutDeadline = Clock.nowNs() + 30_000_000_000
        while streams.closedEarly == 0 && Clock.nowNs() < cutDeadline { try await Task.sleep(nanoseconds: 20_000_000) }
        check(streams.closedEarly == 1, "the stream ends when its gateway is killed (\(streams.closedEarly))")
        // A like made while no gateway runs: only Last-Event-ID brings it to the stream.
        let link = try await ServiceLink(overrides: options.serviceEnvironment)
        defer { link.shutdown() }
        let reply = try await link.profile.call(
            Profile.SetLike.self, .init(userId: pop.users[3].id, postId: postId, liked: true))
        check(reply.liked, "a like through ProfileService while the gateway is down")
        try await cluster.start("gateway")
        var status = 0
        let likeDeadline = Clock.nowNs() + 30_000_000_000
        repeat {
            status = await like(4)
            if status != 200 { try await Task.sleep(nanoseconds: 100_000_000) }
        } while status != 200 && Clock.nowNs() < likeDeadline
        check(status == 200, "a like over HTTP once the gateway is back (\(status))")
        check(await like(5) == 200, "another like over HTTP")
        check(try await arrived([3, 4, 5], within: 60), "the like made while it was down, and the later ones, arrive")
        let counts = Dictionary(streams.events.map { ($0.key, 1) }, uniquingKeysWith: +)
        let seen = [2, 3, 4, 5].map { counts[key($0)] ?? 0 }
        check(seen == [1, 1, 1, 1], "each like arrives once (\(seen))")
        check(streams.reconnects >= 1, "the stream was opened again (\(streams.reconnects) reconnects)")
        print(
            "stream resume: \(streams.reconnects) reconnect(s) after \(streams.reconnectFailures) failed attempt(s); "
                + "likes seen \(seen)")
        return (failures, passed)
    }
}
