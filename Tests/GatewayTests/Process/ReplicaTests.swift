import Foundation
import Harness
import Messages
import Support
import TestSupport
import Testing
import Transport
import Wire

/// Two replicas of every service on one PostgreSQL database each, behind one gateway that lists
/// both in each endpoint variable: requests spread over both, one replica per service is active
/// (publishes, applies, runs jobs), and a recipient's seq stays gapless while both
/// NotificationService replicas write for it at once, its groups and badge equal to its list; SIGKILL of each active replica during
/// likes loses nothing and repeats nothing. Runs in the PostgreSQL pass of `scripts/test`.
@Suite(.serialized, .enabled(if: TestStorage.engine == .postgres, "replicas need PostgreSQL"))
struct ReplicaTests {
    static let services = ["auth", "profile", "notification"]

    static func startReplicated() async throws -> Cluster {
        let cluster = Cluster()
        // Every replica's ports first: each process is given all of the others'.
        try cluster.reserve(services.flatMap { [$0, "\($0).2"] })
        for service in services {
            try await cluster.start(service)
            try await cluster.start("\(service).2")
        }
        try await cluster.start("gateway")
        return cluster
    }

    /// The `ops.ping` counters of one process (a replica: `profile.2`).
    static func counters(_ cluster: Cluster, _ name: String, _ context: ZMQContext) async throws -> [String: Int64] {
        let client = try cluster.client(name, context: context)
        defer { client.shutdown() }
        return try await client.call(Ops.Ping.self, Empty(), timeoutMs: 10_000).counters
    }

    /// Which replica of `service` is active now (waits until exactly one is).
    static func active(_ cluster: Cluster, _ service: String, _ context: ZMQContext) async throws -> String {
        let deadline = Timestamp.nowMs() + 60_000
        while true {
            var active: [String] = []
            for name in [service, "\(service).2"] where cluster.processes[name] != nil {
                if let counters = try? await counters(cluster, name, context), counters["leadership.active"] == 1 {
                    active.append(name)
                }
            }
            if active.count == 1 { return active[0] }
            guard Timestamp.nowMs() < deadline else { throw TimedOut(what: "one active \(service) replica: \(active)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    struct TimedOut: Error { var what: String }

    /// The owner's whole notification list, newest first, once it holds `count` (or the deadline).
    static func notifications(_ http: HTTPClient, _ token: String, count: Int) async throws -> [[String: Any]] {
        let deadline = Timestamp.nowMs() + 120_000
        var items: [[String: Any]] = []
        while Timestamp.nowMs() < deadline {
            items = []
            var cursor: String?
            repeat {
                let page = try http.request(
                    "GET", "/v1/notifications?limit=100" + (cursor.map { "&cursor=\($0)" } ?? ""), token: token)
                items += page.object["items"] as? [[String: Any]] ?? []
                cursor = page.object["nextCursor"] as? String
            } while cursor != nil
            if items.count >= count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return items
    }

    @Test func twoReplicasOfEachServiceShareTheWorkAndKeepOneRecipientsSeqGapless() async throws {
        let cluster = try await Self.startReplicated()
        defer { cluster.stopAll() }
        let context = ZMQContext()
        defer { context.shutdown() }
        for service in Self.services { _ = try await Self.active(cluster, service, context) }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (owner, _) = try EndToEndTests.register(http, "rp\(tag)o")
        let followerCount = 40
        var followers: [(name: String, token: String)] = []
        for i in 0..<followerCount {
            let name = "rp\(tag)f\(i)"
            followers.append((name, try EndToEndTests.register(http, name).0))
        }
        let posts = try EndToEndTests.createPosts(http, owner, count: 10)
        let stream = try SSEClient(port: cluster.gatewayPort, token: owner)
        #expect(await stream.waitUntilOpen())
        let before = try await withThrowingTaskGroup(of: (String, Int64).self) { group in
            for name in ["notification", "notification.2"] {
                group.addTask { (name, try await Self.counters(cluster, name, context)["requests.notification.follow"] ?? 0) }
            }
            return try await group.reduce(into: [String: Int64]()) { $0[$1.0] = $1.1 }
        }

        // Every follower follows the owner and likes each post, eight clients at once: follows
        // are written by whichever NotificationService replica takes the call, likes by the
        // active one as it applies ProfileService's events, all for the same recipient.
        var actions: [(kind: String, follower: Int, post: Int)] = []
        for f in 0..<followerCount {
            actions.append(("follow", f, 0))
            for p in 0..<posts.count { actions.append(("like", f, p)) }
        }
        actions.shuffle()
        let (work, people, postIds) = (actions, followers, posts)
        let statuses = Locked<[Int]>([])
        try await EndToEndTests.concurrently(workers: 8, count: work.count, port: cluster.gatewayPort) { client, i in
            let action = work[i]
            let follower = people[action.follower]
            let status =
                action.kind == "follow"
                ? try client.request("PUT", "/v1/users/rp\(tag)o/follow", token: follower.token).status
                : try client.request("PUT", "/v1/posts/\(postIds[action.post])/like", token: follower.token).status
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.get().allSatisfy { $0 == 200 }, "\(statuses.get().filter { $0 != 200 })")

        // Both NotificationService replicas took follows.
        for name in ["notification", "notification.2"] {
            let after = try await Self.counters(cluster, name, context)["requests.notification.follow"] ?? 0
            #expect(after > before[name] ?? 0, "\(name) took no follow")
        }
        // One notification per follow and per like; seqs 1...n, none missing, none twice.
        let expected = followerCount * (1 + posts.count)
        let items = try await Self.notifications(http, owner, count: expected)
        #expect(items.count == expected)
        let seqs = items.compactMap { $0["seq"] as? Int }
        #expect(seqs == Array((1...expected).reversed()), "seqs are not \(expected)...1")
        // The stream saw each of them once.
        #expect(await stream.waitFor(count: expected, timeout: 120), "stream has \(stream.events.count)")
        let streamed = stream.events.compactMap(\.id)
        #expect(streamed.count == expected && Set(streamed).count == expected)
        // The groups both replicas kept at once (follows are written by either replica, into
        // the same day's group) equal the flat list, and so does the badge.
        let groups = try GroupedNotificationTests.groups(http, owner, limit: 4)
        #expect(groups.count == 1 + posts.count)
        var members: [String: Int] = [:]
        for n in items { members[n["groupKey"] as? String ?? "?", default: 0] += 1 }
        for g in groups {
            #expect(g["count"] as? Int == followerCount && members[g["key"] as? String ?? ""] == followerCount, "\(g)")
        }
        let badge = try http.request("GET", "/v1/notifications/unread-count", token: owner)
        #expect(badge.object["unreadCount"] as? Int == expected)
        // Counts equal their lists.
        for post in posts {
            let read = try http.request("GET", "/v1/posts/\(post)", token: owner)
            #expect(read.object["likeCount"] as? Int == followerCount, "\(read.text)")
        }
        // Exactly one replica of each service is active.
        for service in Self.services {
            var active = 0
            for name in [service, "\(service).2"] {
                active += Int(try await Self.counters(cluster, name, context)["leadership.active"] ?? 0)
            }
            #expect(active == 1, "\(service): \(active) active replicas")
        }
    }

    @Test func killingTheActiveReplicaOfEachServiceDuringLikesLosesNothingAndRepeatsNothing() async throws {
        let cluster = try await Self.startReplicated()
        defer { cluster.stopAll() }
        let context = ZMQContext()
        defer { context.shutdown() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (owner, _) = try EndToEndTests.register(http, "rk\(tag)o")
        var likers: [String] = []
        for i in 0..<4 { likers.append(try EndToEndTests.register(http, "rk\(tag)l\(i)").0) }
        let posts = try EndToEndTests.createPosts(http, owner, count: 30)
        let stream = try SSEClient(port: cluster.gatewayPort, token: owner)
        #expect(await stream.waitUntilOpen())

        // 120 likes from four clients; after the 30th answer the active replica of each
        // service is killed (SIGKILL), the other takes over.
        let likes = posts.flatMap { post in likers.map { (post, $0) } }
        let answered = Locked<[(index: Int, status: Int, atMs: Int64)]>([])
        let killed = Locked<[String]>([])
        let killedAt = Locked<Int64>(0)
        try await EndToEndTests.concurrently(workers: 4, count: likes.count, port: cluster.gatewayPort) { client, i in
            let (post, token) = likes[i]
            let status = try client.request("PUT", "/v1/posts/\(post)/like", token: token).status
            let count = answered.withLock {
                $0.append((i, status, Timestamp.nowMs()))
                return $0.count
            }
            guard count == 30 else { return }
            var names: [String] = []
            for service in Self.services { names.append(try await Self.active(cluster, service, context)) }
            killedAt.set(Timestamp.nowMs())
            for name in names { cluster.kill(name) }
            killed.set(names)
            // How long until each service has an active replica again.
            for service in Self.services {
                _ = try await Self.active(cluster, service, context)
                print("replica failover: \(service) active again \(Timestamp.nowMs() - killedAt.get()) ms after SIGKILL")
            }
        }
        #expect(killed.get().count == 3)
        let statuses = answered.get()
        #expect(statuses.count == likes.count)
        #expect(statuses.allSatisfy { [200, 503, 504].contains($0.status) }, "\(statuses.map(\.status))")
        let refused = statuses.filter { $0.status != 200 }
        if let last = refused.map(\.atMs).max() {
            print(
                "replica failover: \(refused.count) of \(likes.count) likes refused, the last \(last - killedAt.get()) ms after the kills"
            )
        }
        // The others took over: each service has one active replica again.
        for service in Self.services {
            let name = try await Self.active(cluster, service, context)
            #expect(!killed.get().contains(name))
        }

        // The refused likes again (idempotent), until each is taken.
        let deadline = Timestamp.nowMs() + 120_000
        for entry in refused {
            let (post, token) = likes[entry.index]
            var again = 0
            repeat {
                again = try http.request("PUT", "/v1/posts/\(post)/like", token: token).status
                if again != 200 { try await Task.sleep(for: .milliseconds(100)) }
            } while again != 200 && Timestamp.nowMs() < deadline
            #expect(again == 200)
        }
        for post in posts {
            let read = try http.request("GET", "/v1/posts/\(post)", token: owner)
            #expect(read.object["likeCount"] as? Int == likers.count, "\(read.text)")
        }
        // One notification per like: none lost, none twice, seqs 1...n.
        let items = try await Self.notifications(http, owner, count: likes.count)
        let pairs = items.map {
            "\(($0["post"] as? [String: Any])?["id"] ?? "")/\(($0["actor"] as? [String: Any])?["username"] ?? "")"
        }
        #expect(items.count == likes.count && Set(pairs).count == likes.count, "\(items.count) notifications")
        let seqs = items.compactMap { $0["seq"] as? Int }
        #expect(seqs == Array((1...likes.count).reversed()))
        // The open stream saw each of them once (repaired by seq where a live one was lost).
        #expect(await stream.waitFor(count: likes.count, timeout: 120), "stream has \(stream.events.count)")
        let streamed = stream.events.compactMap(\.id)
        #expect(streamed.count == likes.count && Set(streamed).count == likes.count)
    }

    @Test func aStreamResumesOnAnotherGatewayWithLastEventIDWhenItsGatewayDies() async throws {
        let cluster = try await Self.startReplicated()
        defer { cluster.stopAll() }
        let second = try await cluster.start("gateway.2")
        let secondPort = Int(second["port"] ?? "0") ?? 0
        let http = HTTPClient(port: secondPort)
        let tag = RandomID.make().prefix(6)
        let (owner, _) = try EndToEndTests.register(http, "rg\(tag)o")
        var likers: [String] = []
        for i in 0..<3 { likers.append(try EndToEndTests.register(http, "rg\(tag)l\(i)").0) }
        let posts = try EndToEndTests.createPosts(http, owner, count: 10)
        let likes = posts.flatMap { post in likers.map { (post, $0) } }
        // The owner's stream on the first gateway; the likes go through the second.
        let first = try SSEClient(port: cluster.gatewayPort, token: owner)
        #expect(await first.waitUntilOpen())
        for (post, token) in likes.prefix(15) {
            #expect(try http.request("PUT", "/v1/posts/\(post)/like", token: token).status == 200)
        }
        #expect(await first.waitFor(count: 15, timeout: 120))
        cluster.kill("gateway")
        #expect(await first.waitForClose(timeout: 60))
        // Likes while the client is away, then it comes back on the other gateway with the last
        // id it saw.
        for (post, token) in likes.dropFirst(15) {
            #expect(try http.request("PUT", "/v1/posts/\(post)/like", token: token).status == 200)
        }
        let lastSeen = try #require(first.events.last?.id)
        let resumed = try SSEClient(port: secondPort, token: owner, lastEventId: lastSeen)
        #expect(await resumed.waitFor(count: likes.count - first.events.count, timeout: 120))
        let all = (first.events + resumed.events).compactMap(\.id)
        #expect(all.count == likes.count && Set(all).count == likes.count, "\(all.count) of \(likes.count)")
    }
}
