import Foundation
import Harness
import Messages
import TestSupport
import Testing
import Transport
import Wire

/// The live path shows a notification's actor as its event carried it: a like reaches the
/// owner's stream without the gateway asking ProfileService (`profile.users_by_ids`), even with
/// ProfileService stopped, and a rename or a new profile photo shows in the next notification.
/// A follow carries no actor: NotificationService adds it from its replica of profiles
/// (`profile.user.changed`, sent when a profile is created and when it changes). Through the
/// four real executables.
@Suite(.serialized)
struct LiveActorTests {
    static let image = "https://images.example.com/p/1.jpg"

    /// `profile.users_by_ids` calls the gateway has made (every outcome), from its `/metrics`.
    static func userLookups(_ http: HTTPClient) throws -> Int {
        let prefix = #"rpc_calls_total{service="profile",type="profile.users_by_ids","#
        return try http.request("GET", "/metrics").text.split(separator: "\n")
            .filter { $0.hasPrefix(prefix) }
            .reduce(0) { $0 + (Int($1.split(separator: " ").last ?? "") ?? 0) }
    }

    static func post(_ http: HTTPClient, _ token: String) throws -> String {
        let created = try http.request(
            "POST", "/v1/posts", token: token, json: ["postType": "photo", "mediaURL": image, "thumbnailURL": image])
        #expect(created.status == 201)
        return try #require(created.object["id"] as? String)
    }

    /// The like is written and published while the gateway is frozen; then ProfileService is
    /// frozen and the gateway runs again: the like reaches the stream with its actor, although
    /// ProfileService cannot answer (the actor was never looked up before, so no cache has it).
    @Test func aLikeReachesTheStreamWhileProfileServiceIsStopped() async throws {
        let cluster = try await EndToEndTests.startCluster(["GATEWAY_STREAM_CHECK_MS": "3600000"])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (tokenA, a) = try EndToEndTests.register(http, "l\(tag)a")
        let (_, b) = try EndToEndTests.register(http, "l\(tag)b", name: "Bee")
        let (tokenC, _) = try EndToEndTests.register(http, "l\(tag)c")
        let postId = try Self.post(http, tokenA)
        let stream = try SSEClient(port: cluster.gatewayPort, token: tokenA)
        defer { stream.close() }
        #expect(await stream.waitUntilOpen())
        // A follow shows the subscription is live.
        #expect(try http.request("PUT", "/v1/users/l\(tag)a/follow", token: tokenC).status == 200)
        #expect(await stream.waitFor(count: 1))
        #expect((stream.events.first?.json["actor"] as? [String: Any])?["username"] as? String == "l\(tag)c")
        let lookups = try Self.userLookups(http)

        cluster.pause("gateway")
        let context = ZMQContext()
        let profile = try cluster.client("profile", context: context)
        let graph = try cluster.client("notification", context: context)
        defer {
            profile.shutdown()
            graph.shutdown()
        }
        _ = try await profile.call(Profile.SetLike.self, .init(userId: b["id"] as? String ?? "", postId: postId, liked: true))
        // Stored (and so published) by NotificationService before ProfileService stops.
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
        cluster.pause("profile")
        defer { cluster.resume("profile") }
        cluster.resume("gateway")

        #expect(await stream.waitFor(count: 2, timeout: 20), "stream has \(stream.events.count) events")
        #expect(stream.events.map(\.id) == ["1", "2"])
        let like = stream.events.last?.json ?? [:]
        #expect(like["type"] as? String == "like")
        #expect(like["text"] as? String == "l\(tag)b liked your photo.")
        let actor = like["actor"] as? [String: Any] ?? [:]
        #expect(actor["id"] as? String == b["id"] as? String)
        #expect(actor["username"] as? String == "l\(tag)b" && actor["name"] as? String == "Bee")
        #expect(try Self.userLookups(http) == lookups, "the gateway asked ProfileService for the actor")
    }

    /// The liker renames and sets a new profile photo between two likes: the second live
    /// notification shows the new name, photo and text; neither like made the gateway ask
    /// ProfileService.
    @Test func aRenameAndANewPhotoShowInTheNextLiveNotification() async throws {
        let cluster = try await EndToEndTests.startCluster(["GATEWAY_STREAM_CHECK_MS": "3600000"])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (tokenA, _) = try EndToEndTests.register(http, "r\(tag)a")
        let (tokenB, _) = try EndToEndTests.register(http, "r\(tag)b", name: "Bee")
        let first = try Self.post(http, tokenA)
        let second = try Self.post(http, tokenA)
        let stream = try SSEClient(port: cluster.gatewayPort, token: tokenA)
        defer { stream.close() }
        #expect(await stream.waitUntilOpen())
        let lookups = try Self.userLookups(http)

        #expect(try http.request("PUT", "/v1/posts/\(first)/like", token: tokenB).status == 200)
        #expect(await stream.waitFor(count: 1))
        let before = stream.events.last?.json ?? [:]
        #expect(before["text"] as? String == "r\(tag)b liked your photo.")
        let oldActor = before["actor"] as? [String: Any] ?? [:]
        #expect(oldActor["username"] as? String == "r\(tag)b" && oldActor["name"] as? String == "Bee")
        #expect(oldActor["profilePhotoURL"] is NSNull)

        let photo = "https://images.example.com/u/r\(tag)b.jpg"
        let edited = try http.request(
            "PATCH", "/v1/me/profile", token: tokenB, json: ["username": "r\(tag)bee", "name": "Bea", "profilePhotoURL": photo])
        #expect(edited.status == 200, "\(edited.status) \(edited.text)")
        #expect(try http.request("PUT", "/v1/posts/\(second)/like", token: tokenB).status == 200)
        #expect(await stream.waitFor(count: 2))
        let after = stream.events.last?.json ?? [:]
        #expect(after["text"] as? String == "r\(tag)bee liked your photo.")
        let newActor = after["actor"] as? [String: Any] ?? [:]
        #expect(newActor["id"] as? String == oldActor["id"] as? String)
        #expect(newActor["username"] as? String == "r\(tag)bee" && newActor["name"] as? String == "Bea")
        #expect(newActor["profilePhotoURL"] as? String == photo)
        #expect(try Self.userLookups(http) == lookups, "the gateway asked ProfileService for the actor")
    }

    /// Follows by a new account and by a renamed one show their actors (the name, the photo)
    /// without the gateway asking ProfileService: NotificationService's replica had them. Each
    /// follower's like first shows that NotificationService has applied ProfileService's events
    /// up to it (they come in order), so the replica is current before the follow.
    @Test func aFollowShowsItsActorWithoutALookup() async throws {
        let cluster = try await EndToEndTests.startCluster(["GATEWAY_STREAM_CHECK_MS": "3600000"])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (tokenA, _) = try EndToEndTests.register(http, "f\(tag)a")
        let (tokenB, b) = try EndToEndTests.register(http, "f\(tag)b", name: "Bee")
        let (tokenC, c) = try EndToEndTests.register(http, "f\(tag)c", name: "Cee")
        let photo = "https://images.example.com/u/f\(tag)c.jpg"
        let edited = try http.request("PATCH", "/v1/me/profile", token: tokenC, json: ["name": "Sea", "profilePhotoURL": photo])
        #expect(edited.status == 200, "\(edited.status) \(edited.text)")
        let postId = try Self.post(http, tokenA)
        let stream = try SSEClient(port: cluster.gatewayPort, token: tokenA)
        defer { stream.close() }
        #expect(await stream.waitUntilOpen())
        #expect(try http.request("PUT", "/v1/posts/\(postId)/like", token: tokenB).status == 200)
        #expect(try http.request("PUT", "/v1/posts/\(postId)/like", token: tokenC).status == 200)
        #expect(await stream.waitFor(count: 2))
        let lookups = try Self.userLookups(http)

        #expect(try http.request("PUT", "/v1/users/f\(tag)a/follow", token: tokenB).status == 200)
        #expect(try http.request("PUT", "/v1/users/f\(tag)a/follow", token: tokenC).status == 200)
        #expect(await stream.waitFor(count: 4), "stream has \(stream.events.count) events")
        let follows = stream.events.suffix(2).map(\.json)
        #expect(follows.map { $0["type"] as? String } == ["follow", "follow"])
        let actors = follows.map { $0["actor"] as? [String: Any] ?? [:] }
        #expect(actors[0]["id"] as? String == b["id"] as? String && actors[0]["name"] as? String == "Bee")
        #expect(actors[0]["username"] as? String == "f\(tag)b" && actors[0]["profilePhotoURL"] is NSNull)
        #expect(actors[1]["id"] as? String == c["id"] as? String && actors[1]["name"] as? String == "Sea")
        #expect(actors[1]["profilePhotoURL"] as? String == photo)
        #expect(try Self.userLookups(http) == lookups, "the gateway asked ProfileService for a follow's actor")
    }
}
