import Foundation
import Harness
import Support
import TestSupport
import Testing
import Wire

/// API.md's undo/redo rule through the real executables: undoing a like or a follow removes its
/// notification (list, group, badge); doing it again leaves the recipient exactly one, a new
/// notification with a new seq that the stream delivers; and no device gets a second push for
/// the same actor and object. On either engine, and (PostgreSQL) with two gateways and two
/// replicas of every service, the same account toggling from several connections at once.
///
/// Events are applied asynchronously, so each check first waits for a later marker: a like by
/// another account made after the toggles answered. ProfileService publishes in commit order
/// and NotificationService applies in that order, so once the marker's notification is listed,
/// every toggle before it has been applied.
@Suite(.serialized)
struct UndoRedoEndToEndTests {
    struct TimedOut: Error { var what: String }

    /// The recipient's state: its flat list, its groups and its unread count.
    struct Seen {
        var items: [[String: Any]]
        var groups: [[String: Any]]
        var unread: Int

        init(_ http: HTTPClient, _ token: String) throws {
            items = try GroupedNotificationTests.flat(http, token)
            groups = try GroupedNotificationTests.groups(http, token)
            unread = try http.request("GET", "/v1/notifications/unread-count", token: token).object["unreadCount"] as? Int ?? -1
        }

        /// Items of `type` by `username`.
        func of(_ type: String, by username: String) -> [[String: Any]] {
            items.filter { $0["type"] as? String == type && Self.actor($0) == username }
        }

        func group(_ key: String) -> [String: Any]? { groups.first { $0["key"] as? String == key } }

        static func actor(_ item: [String: Any]) -> String? { (item["actor"] as? [String: Any])?["username"] as? String }

        static func actors(_ group: [String: Any]?) -> [String] {
            (group?["actors"] as? [[String: Any]] ?? []).compactMap { $0["username"] as? String }
        }
    }

    /// Reads the recipient's state until `done` holds (the marker is in), or throws after 120 s.
    static func seen(_ http: HTTPClient, _ token: String, until done: (Seen) -> Bool) async throws -> Seen {
        let deadline = Timestamp.nowMs() + 120_000
        while true {
            let seen = try Seen(http, token)
            if done(seen) { return seen }
            guard Timestamp.nowMs() < deadline else { throw TimedOut(what: "\(seen.items)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Runs `body(i)` for `i` in `0..<count`, each on a thread of its own, all at once (blocking
    /// HTTP clients, so the requests are really in flight together), and waits for them all.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let group = DispatchGroup()
            for i in 0..<count {
                group.enter()
                Thread {
                    body(i)
                    group.leave()
                }.start()
            }
            group.notify(queue: .global()) { done.resume() }
        }
    }

    static func send(_ http: HTTPClient, _ method: String, _ path: String, _ token: String) throws {
        let r = try http.request(method, path, token: token, json: method == "PUT" ? [:] : nil)
        #expect(r.status == 200, "\(method) \(path): \(r.status) \(r.text)")
    }

    @Test func likeAndFollowUndoneAndRedoneLeaveOneNotificationEachAndOnePush() async throws {
        let (cluster, apns) = try await PushEndToEndTests.start()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (liker, marker) = ("ur\(tag)a", "ur\(tag)m")
        let owner = try PushEndToEndTests.user(http, "ur\(tag)o")
        let likerSession = try PushEndToEndTests.user(http, liker)
        let markerSession = try PushEndToEndTests.user(http, marker)
        for name in [liker, marker] { try PushEndToEndTests.introduce(http, viewer: owner, name) }
        let device = PushEndToEndTests.deviceToken()
        try PushEndToEndTests.registerDevice(http, owner, device)
        let posts = try EndToEndTests.createPosts(http, owner, count: 2)
        let stream = try SSEClient(port: cluster.gatewayPort, token: owner)
        #expect(await stream.waitUntilOpen())

        // The like and the follow, each pushed once.
        try Self.send(http, "PUT", "/v1/posts/\(posts[0])/like", likerSession)
        try Self.send(http, "PUT", "/v1/users/ur\(tag)o/follow", likerSession)
        #expect(try await PushEndToEndTests.received(apns, atLeast: 2).count == 2)
        // Undone and done again, 5 times each (like → unlike → like …), ending done.
        for _ in 0..<5 {
            try Self.send(http, "DELETE", "/v1/posts/\(posts[0])/like", likerSession)
            try Self.send(http, "DELETE", "/v1/users/ur\(tag)o/follow", likerSession)
            try Self.send(http, "PUT", "/v1/posts/\(posts[0])/like", likerSession)
            try Self.send(http, "PUT", "/v1/users/ur\(tag)o/follow", likerSession)
        }
        try Self.send(http, "PUT", "/v1/posts/\(posts[1])/like", markerSession)
        var seen = try await Self.seen(http, owner) { !$0.of("like", by: marker).isEmpty }
        // Exactly one of each, each a new notification (a seq after the first two): each round
        // takes two new seqs, 3 to 12 in all, the marker 13. Which of the like and the follow
        // of a round comes first is not fixed: the follow is written by its request, the like
        // when NotificationService applies ProfileService's event, a moment later.
        let likes = seen.of("like", by: liker)
        let follows = seen.of("follow", by: liker)
        #expect(likes.count == 1 && follows.count == 1, "\(seen.items)")
        let (likeSeq, followSeq) = (likes.first?["seq"] as? Int ?? 0, follows.first?["seq"] as? Int ?? 0)
        #expect((3...12).contains(likeSeq) && (3...12).contains(followSeq) && likeSeq != followSeq, "\(seen.items)")
        #expect(seen.of("like", by: marker).first?["seq"] as? Int == 13)
        #expect(seen.items.count == 3 && seen.unread == 3)
        #expect(seen.group("like:\(posts[0])")?["count"] as? Int == 1)
        #expect(Seen.actors(seen.group("like:\(posts[0])")) == [liker])
        let followGroups = seen.groups.filter { $0["type"] as? String == "follow" }
        #expect(followGroups.map { $0["count"] as? Int } == [1] && Seen.actors(followGroups.first) == [liker])
        // The stream delivered every redo as it was made: 2 + 10 redos + the marker.
        #expect(await stream.waitFor(count: 13, timeout: 120), "stream has \(stream.events.count)")
        #expect(stream.events.compactMap(\.id) == (1...13).map(String.init))

        // One push each of the like, the follow and the marker's like: no redo was pushed.
        _ = try await PushEndToEndTests.received(apns, atLeast: 3)
        try await PushEndToEndTests.waitUntilDrained(cluster)
        let pushes = try await PushEndToEndTests.received(apns)
        #expect(pushes.map(\.seq) == [1, 2, 13], "\(pushes)")
        #expect(pushes.allSatisfy { $0.token == device })

        // Undone for good: none of either, the badge and the groups agree.
        try Self.send(http, "DELETE", "/v1/posts/\(posts[0])/like", likerSession)
        try Self.send(http, "DELETE", "/v1/users/ur\(tag)o/follow", likerSession)
        try Self.send(http, "DELETE", "/v1/posts/\(posts[1])/like", markerSession)
        try Self.send(http, "PUT", "/v1/posts/\(posts[1])/like", markerSession)
        seen = try await Self.seen(http, owner) { ($0.of("like", by: marker).first?["seq"] as? Int ?? 0) > 13 }
        #expect(seen.items.count == 1 && seen.unread == 1, "\(seen.items)")
        #expect(seen.group("like:\(posts[0])") == nil && !seen.groups.contains { $0["type"] as? String == "follow" })
    }

    /// Two gateways and two replicas of every service (PostgreSQL): the same account likes and
    /// unlikes one post, and follows and unfollows its owner, from six connections spread over
    /// both gateways at once; afterwards the owner has one like notification and one follow
    /// notification from it, or none, as the like and the follow finally stand.
    @Test(.enabled(if: TestStorage.engine == .postgres, "replicas need PostgreSQL"))
    func concurrentTogglesOverTwoGatewaysAndReplicasSettleToOneOrNone() async throws {
        let cluster = try await ReplicaTests.startReplicated()
        defer { cluster.stopAll() }
        let second = try await cluster.start("gateway.2")
        let ports = [cluster.gatewayPort, Int(second["port"] ?? "0") ?? 0]
        let http = HTTPClient(port: ports[0])
        let tag = RandomID.make().prefix(6)
        let (ownerName, liker, marker) = ("uc\(tag)o", "uc\(tag)a", "uc\(tag)m")
        let owner = try EndToEndTests.register(http, ownerName).0
        let likerSession = try EndToEndTests.register(http, liker).0
        let markerSession = try EndToEndTests.register(http, marker).0
        let posts = try EndToEndTests.createPosts(http, owner, count: 4)

        for round in 0..<3 {
            // 120 toggles in random order: PUT or DELETE of the like and of the follow.
            let requests: [(String, String)] = (0..<120).map { i in
                let method = Bool.random() ? "PUT" : "DELETE"
                return (method, i % 2 == 0 ? "/v1/posts/\(posts[0])/like" : "/v1/users/\(ownerName)/follow")
            }
            let next = Locked(0)
            let answers = Locked<[String]>([])
            await Self.onThreads(6) { worker in
                let client = HTTPClient(port: ports[worker % 2])
                while true {
                    let i = next.withLock { n -> Int in
                        n += 1
                        return n - 1
                    }
                    guard i < requests.count else { return }
                    let (method, path) = requests[i]
                    let status = (try? client.request(method, path, token: likerSession, json: method == "PUT" ? [:] : nil))?
                        .status
                    answers.withLock { $0.append("\(method) \(path): \(status.map(String.init) ?? "no answer")") }
                }
            }
            let refused = answers.get().filter { !$0.hasSuffix(": 200") }
            #expect(answers.get().count == requests.count && refused.isEmpty, "\(refused)")
            // How it finally stands, as the services say.
            let post = try http.request("GET", "/v1/posts/\(posts[0])", token: likerSession).object
            let liked = try #require(post["likedByMe"] as? Bool)
            let header = try http.request("GET", "/v1/users/\(ownerName)", token: likerSession).object
            let following = header["followState"] as? String == "following"
            // The marker: a new like on another post each round.
            try Self.send(http, "PUT", "/v1/posts/\(posts[1 + round])/like", markerSession)
            let seen = try await Self.seen(http, owner) { seen in
                seen.of("like", by: marker).contains { ($0["post"] as? [String: Any])?["id"] as? String == posts[1 + round] }
            }
            #expect(seen.of("like", by: liker).count == (liked ? 1 : 0), "round \(round): liked \(liked), \(seen.items)")
            #expect(seen.of("follow", by: liker).count == (following ? 1 : 0), "round \(round): following \(following)")
            #expect(seen.unread == seen.items.count && seen.items.count == (liked ? 1 : 0) + (following ? 1 : 0) + round + 1)
            #expect((seen.group("like:\(posts[0])")?["count"] as? Int ?? 0) == (liked ? 1 : 0))
            let followCount = seen.groups.filter { $0["type"] as? String == "follow" }.compactMap { $0["count"] as? Int }
            #expect(followCount.reduce(0, +) == (following ? 1 : 0))
            print("undo/redo over replicas, round \(round): liked \(liked), following \(following)")
        }
    }
}
