import Foundation
import Harness
import Messages
import Support
import TestSupport
import Testing
import Transport
import Wire

/// The seeds' screens walked end to end over HTTP against the four real executables.
@Suite(.serialized)
struct EndToEndTests {
    static let image = "https://images.example.com/p/1.jpg"

    /// Registers `username` and returns (token, Me).
    static func register(_ http: HTTPClient, _ username: String, name: String? = nil) throws -> (String, [String: Any]) {
        var body: [String: Any] = ["email": "\(username)@example.com", "username": username, "password": "correct-horse-9"]
        if let name { body["name"] = name }
        let r = try http.request("POST", "/v1/auth/register", json: body)
        #expect(r.status == 201, "register \(username): \(r.status) \(r.text)")
        return (r.object["token"] as? String ?? "", r.object["user"] as? [String: Any] ?? [:])
    }

    /// Creates `count` photo posts of `token`'s user through the gateway. - Returns: their ids.
    static func createPosts(_ http: HTTPClient, _ token: String, count: Int) throws -> [String] {
        let image = "https://images.example.com/p/1.jpg"
        return try (0..<count).map { _ in
            let created = try http.request(
                "POST", "/v1/posts", token: token, json: ["postType": "photo", "mediaURL": image, "thumbnailURL": image])
            #expect(created.status == 201)
            return try #require(created.object["id"] as? String)
        }
    }

    /// Runs `body` once for each index in `0..<count`, from `workers` concurrent clients of the
    /// gateway at `port`, each taking the next index as it finishes one (a load in flight).
    static func concurrently(
        workers: Int, count: Int, port: Int, _ body: @escaping @Sendable (HTTPClient, Int) async throws -> Void
    ) async throws {
        let next = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    let client = HTTPClient(port: port)
                    while true {
                        let i = next.withLock { n -> Int in
                            n += 1
                            return n - 1
                        }
                        guard i < count else { return }
                        try await body(client, i)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func startCluster(_ environment: [String: String] = [:]) async throws -> Cluster {
        let cluster = Cluster(extraEnvironment: environment)
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        return cluster
    }

    @Test func theSeedsScreensEndToEnd() async throws {
        let cluster = try await Self.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let a = "e\(tag)a"
        let b = "e\(tag)b"

        // Register two users; log in by username and by email (case-insensitive).
        let (tokenA, meA) = try Self.register(http, a, name: "Ann")
        let (tokenB, _) = try Self.register(http, b)
        #expect(
            meA["username"] as? String == a && meA["email"] as? String == "\(a)@example.com" && meA["name"] as? String == "Ann")
        let login = try http.request("POST", "/v1/auth/login", json: ["login": a.uppercased(), "password": "correct-horse-9"])
        #expect(login.status == 200 && (login.object["token"] as? String)?.isEmpty == false)
        let loginByEmail = try http.request(
            "POST", "/v1/auth/login", json: ["login": "\(a)@example.com", "password": "correct-horse-9"])
        #expect(loginByEmail.status == 200)
        let wrong = try http.request("POST", "/v1/auth/login", json: ["login": a, "password": "wrong-password"])
        #expect(wrong.status == 401 && wrong.object["code"] as? String == "invalid_credentials")
        #expect(wrong.header("content-type")?.hasPrefix("application/problem+json") == true)

        // Edit profile: the form, then a partial update.
        let form = try http.request("GET", "/v1/me/profile/edit", token: tokenA)
        let sections = form.object["sections"] as? [[String: Any]] ?? []
        let firstKeys = (sections.first?["fields"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
        let privateKeys = (sections.dropFirst().first?["fields"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? String }
        #expect(firstKeys == ["name", "username", "bio"])
        #expect(sections.dropFirst().first?["title"] as? String == "Private Information")
        #expect(privateKeys == ["email", "phone", "gender"])
        let edited = try http.request("PATCH", "/v1/me/profile", token: tokenA, json: ["bio": "hello", "gender": "female"])
        #expect(
            edited.status == 200 && edited.object["bio"] as? String == "hello" && edited.object["gender"] as? String == "female")

        // A's live stream, then B acts on A's post; each action's notification is awaited before
        // the next, since they reach NotificationService by different paths (events, requests).
        let stream = try SSEClient(port: cluster.gatewayPort, token: tokenA)
        #expect(await stream.waitUntilOpen())
        let created = try http.request(
            "POST", "/v1/posts", token: tokenA,
            json: [
                "postType": "photo", "mediaURL": Self.image, "thumbnailURL": Self.image, "caption": "first",
                "taggedUsernames": [b],
            ])
        #expect(created.status == 201, "post: \(created.text)")
        let postId = created.object["id"] as? String ?? ""
        #expect(((created.object["taggedUsers"] as? [[String: Any]])?.first?["username"] as? String) == b)
        let like = try http.request("PUT", "/v1/posts/\(postId)/like", token: tokenB)
        #expect(like.status == 200 && like.object["liked"] as? Bool == true && like.object["likeCount"] as? Int == 1)
        let likeAgain = try http.request("PUT", "/v1/posts/\(postId)/like", token: tokenB)
        #expect(likeAgain.object["likeCount"] as? Int == 1)  // idempotent
        #expect(await stream.waitFor(count: 1))
        let comment = try http.request("POST", "/v1/posts/\(postId)/comments", token: tokenB, json: ["text": "nice!"])
        #expect(comment.status == 201 && comment.object["text"] as? String == "nice!")
        #expect(await stream.waitFor(count: 2))
        let follow = try http.request("PUT", "/v1/users/\(a)/follow", token: tokenB, json: [:])
        #expect(follow.status == 200 && follow.object["followState"] as? String == "following")

        // The stream shows them in order with increasing ids; the list shows them newest first.
        #expect(await stream.waitFor(count: 3), "stream delivered \(stream.events.count) of 3")
        let events = stream.events
        #expect(events.prefix(3).map { $0.json["type"] as? String } == ["like", "comment", "follow"])
        let ids = events.compactMap { Int($0.id ?? "") }
        #expect(ids == ids.sorted() && Set(ids).count == ids.count)
        #expect(events.allSatisfy { $0.event == "notification" })
        let list = try http.request("GET", "/v1/notifications", token: tokenA)
        let items = list.object["items"] as? [[String: Any]] ?? []
        #expect(
            items.prefix(3).map { $0["text"] as? String } == [
                "\(b) started following you.", "\(b) commented: nice!", "\(b) liked your photo.",
            ])
        #expect(list.object["unreadCount"] as? Int == 3)
        #expect(items.first?["followState"] as? String == "not_following")
        #expect(((items.first?["actor"] as? [String: Any])?["username"] as? String) == b)
        #expect(((items[2]["post"] as? [String: Any])?["thumbnailURL"] as? String) == Self.image)

        // B was tagged: B's list has the tag notification (applied from the post's event; waited
        // for); the tagged tab shows the post.
        var listB = try http.request("GET", "/v1/notifications", token: tokenB)
        let tagDeadline = Timestamp.nowMs() + 60_000
        while (listB.object["items"] as? [[String: Any]])?.isEmpty != false && Timestamp.nowMs() < tagDeadline {
            try await Task.sleep(for: .milliseconds(50))
            listB = try http.request("GET", "/v1/notifications", token: tokenB)
        }
        #expect((listB.object["items"] as? [[String: Any]])?.first?["text"] as? String == "\(a) tagged you in a post.")
        let tagged = try http.request("GET", "/v1/users/\(b)/tagged", token: tokenA)
        #expect((tagged.object["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [postId])

        // Following back flips the follow notification's followState.
        _ = try http.request("PUT", "/v1/users/\(b)/follow", token: tokenA, json: [:])
        let after = try http.request("GET", "/v1/notifications", token: tokenA)
        #expect((after.object["items"] as? [[String: Any]])?.first?["followState"] as? String == "following")

        // Profile header, grid, follower list.
        let header = try http.request("GET", "/v1/users/\(a)", token: tokenB)
        let counts = header.object["counts"] as? [String: Any] ?? [:]
        #expect(counts["followers"] as? Int == 1 && counts["following"] as? Int == 1 && counts["posts"] as? Int == 1)
        #expect(header.object["followState"] as? String == "following")
        let grid = try http.request("GET", "/v1/users/\(a)/posts", token: tokenB)
        #expect((grid.object["items"] as? [[String: Any]])?.map { $0["id"] as? String } == [postId])
        let followers = try http.request("GET", "/v1/users/\(a)/followers", token: tokenA)
        let entry = (followers.object["items"] as? [[String: Any]])?.first
        #expect(
            ((entry?["user"] as? [String: Any])?["username"] as? String) == b && entry?["followState"] as? String == "following")

        // Mark read.
        let maxSeq = items.compactMap { $0["seq"] as? Int }.max() ?? 0
        let read = try http.request("POST", "/v1/notifications/read", token: tokenA, json: ["upToSeq": maxSeq])
        #expect(read.status == 200 && read.object["unreadCount"] as? Int == 0)

        // Settings read and toggled.
        let settings = try http.request("GET", "/v1/settings", token: tokenA)
        let settingSections = settings.object["sections"] as? [[String: Any]] ?? []
        let itemIds = settingSections.map { ($0["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String } }
        #expect(
            itemIds == [
                ["edit_profile", "invite_friends", "save_original_posts"],
                ["terms_of_service", "privacy_policy", "help_feedback"],
                ["log_out"],
            ])
        let toggled = try http.request("PATCH", "/v1/settings", token: tokenA, json: ["saveOriginalPosts": true])
        let toggle =
            ((toggled.object["sections"] as? [[String: Any]])?.first?["items"] as? [[String: Any]])?.last?["action"]
            as? [String: Any]
        #expect(toggled.status == 200 && toggle?["value"] as? Bool == true)

        // Log out: the token is dead everywhere and the stream is closed.
        let out = try http.request("POST", "/v1/auth/logout", token: tokenA, json: [:])
        #expect(out.status == 200 && out.object["loggedOut"] as? Bool == true)
        #expect(try http.request("GET", "/v1/me", token: tokenA).status == 401)
        #expect(await stream.waitForClose(timeout: 10), "stream still open after logout")
    }

    @Test func aServiceDownGives503ThenEverythingWorksAgainWithNothingLost() async throws {
        let cluster = try await Self.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (tokenA, _) = try Self.register(http, "k\(tag)a")
        let (tokenB, _) = try Self.register(http, "k\(tag)b")
        let created = try http.request(
            "POST", "/v1/posts", token: tokenA, json: ["postType": "photo", "mediaURL": Self.image, "thumbnailURL": Self.image])
        let postId = created.object["id"] as? String ?? ""
        let stream = try SSEClient(port: cluster.gatewayPort, token: tokenA)
        #expect(await stream.waitUntilOpen())
        _ = try http.request("PUT", "/v1/posts/\(postId)/like", token: tokenB)
        #expect(await stream.waitFor(count: 1))

        // NotificationService crashes: its routes answer 503 at once, not after a hang.
        cluster.kill("notification")
        let t0 = Date()
        let down = try http.request("GET", "/v1/notifications", token: tokenA)
        #expect(down.status == 503 && down.object["code"] as? String == "service_unavailable")
        #expect(Date().timeIntervalSince(t0) < 30)  // "at once": well under the 60 s a hang would take
        let ready = try http.request("GET", "/readyz")
        #expect(ready.status == 503)
        // Meanwhile ProfileService keeps taking actions; their events wait in its outbox.
        let comment = try http.request(
            "POST", "/v1/posts/\(postId)/comments", token: tokenB, json: ["text": "while you were out"])
        #expect(comment.status == 201)

        // Back on the same ports: the comment notification arrives, nothing lost or repeated.
        try await cluster.start("notification")
        #expect(await stream.waitFor(count: 2), "stream has \(stream.events.count) events")
        var items: [[String: Any]] = []
        let deadline = Timestamp.nowMs() + 60_000
        while Timestamp.nowMs() < deadline {
            let list = try http.request("GET", "/v1/notifications", token: tokenA)
            items = list.object["items"] as? [[String: Any]] ?? []
            if list.status == 200 && items.count >= 2 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(items.map { $0["type"] as? String } == ["comment", "like"])
        #expect(stream.events.map { $0.json["type"] as? String } == ["like", "comment"])
        var readiness = try http.request("GET", "/readyz").status
        while readiness != 200 && Timestamp.nowMs() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            readiness = try http.request("GET", "/readyz").status
        }
        #expect(readiness == 200)
    }

    /// NotificationService restarts while the gateway is frozen, so the gateway's subscription
    /// is gone when a notification is published (a real loss, not a race): when the gateway
    /// runs again it reconnects, the publisher welcomes its subscription again, and the gateway
    /// reads what it missed. The heads check is off, so the welcome alone must do it.
    @Test func aNotificationPublishedWhileTheGatewaysSubscriptionIsGoneArrives() async throws {
        let cluster = try await Self.startCluster(["GATEWAY_STREAM_CHECK_MS": "3600000"])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (tokenA, a) = try Self.register(http, "w\(tag)a")
        let (tokenB, b) = try Self.register(http, "w\(tag)b")
        let created = try http.request(
            "POST", "/v1/posts", token: tokenA, json: ["postType": "photo", "mediaURL": Self.image, "thumbnailURL": Self.image])
        let postId = created.object["id"] as? String ?? ""
        let stream = try SSEClient(port: cluster.gatewayPort, token: tokenA)
        #expect(await stream.waitUntilOpen())
        #expect(try http.request("PUT", "/v1/users/w\(tag)a/follow", token: tokenB).status == 200)
        #expect(await stream.waitFor(count: 1))

        cluster.pause("gateway")
        cluster.kill("notification")
        try await cluster.start("notification")
        // B likes A's post, through ProfileService directly (the gateway is frozen); the
        // notification is stored and published while nobody subscribes to A.
        let context = ZMQContext()
        let profile = try cluster.client("profile", context: context)
        let graph = try cluster.client("notification", context: context)
        defer {
            profile.shutdown()
            graph.shutdown()
        }
        _ = try await profile.call(
            Profile.SetLike.self, .init(userId: b["id"] as? String ?? "", postId: postId, liked: true))
        let aId = a["id"] as? String ?? ""
        let deadline = Timestamp.nowMs() + 60_000
        var head: Int64 = 0
        while head < 2 && Timestamp.nowMs() < deadline {
            head =
                (try? await graph.call(Notifications.NotificationsSince.self, .init(recipientId: aId, afterSeq: 0, limit: 10)))?
                .headSeq ?? 0
            if head < 2 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(head == 2, "the like is not stored")
        cluster.resume("gateway")
        #expect(await stream.waitFor(count: 2), "stream has \(stream.events.count) events")
        #expect(stream.events.map(\.id) == ["1", "2"])
        #expect(stream.events.map { $0.json["type"] as? String } == ["follow", "like"])
        stream.close()
    }
}
