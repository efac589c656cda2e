import Foundation
import Shared
import TestSupport

/// The real NotificationService process, fed by in-process fake AuthService and ProfileService
/// producers (so events can be emitted on demand, also while the service is stopped).
final class Harness: @unchecked Sendable {
    // @unchecked: used by one test at a time; the members are Sendable or only read.
    let context = ZMQContext()
    let auth: FakeAuth
    let profile: FakeProducer
    let cluster: Cluster
    private(set) var client: RPCClient

    init() async throws {
        let dir = makeTemporaryDirectory("notification-test")
        auth = try FakeAuth(context: context, directory: dir)
        profile = try FakeProducer(name: "profile", context: context, directory: dir)
        try auth.start()
        try profile.start()
        cluster = Cluster(
            dataDirectory: dir,
            extraEnvironment: auth.environment().merging(profile.environment(prefix: "PROFILE")) { $1 })
        try await cluster.start("notification")
        client = try cluster.client("notification", context: context)
        try await waitUntilReachable(client)
    }

    /// Stops the service (SIGTERM).
    func stopService() { cluster.stop("notification") }

    /// Starts it again on the same ports and data directory.
    func startService() async throws {
        client.shutdown()
        try await cluster.start("notification")
        client = try cluster.client("notification", context: context)
        try await waitUntilReachable(client)
    }

    /// The service's database file (to rewind its subscriber cursor while it is stopped).
    var databasePath: String { "\(cluster.dataDirectory)/notification.sqlite" }

    func shutdown() {
        cluster.stopAll()
        client.shutdown()
        auth.stop()
        profile.stop()
    }

    // MARK: Shorthands

    @discardableResult
    func follow(_ follower: Identity, _ username: String, notifyPosts: Bool? = nil) async throws
        -> Graph.Follow.Reply
    {
        try await client.call(
            Graph.Follow.self,
            .init(followerId: follower.id, username: username, notifyPosts: notifyPosts))
    }

    @discardableResult
    func unfollow(_ follower: Identity, _ username: String) async throws -> Graph.Unfollow.Reply {
        try await client.call(Graph.Unfollow.self, .init(followerId: follower.id, username: username))
    }

    func header(_ viewer: Identity, _ username: String) async throws -> Graph.Header.Reply {
        try await client.call(Graph.Header.self, .init(viewerId: viewer.id, username: username))
    }

    func notifications(_ user: Identity, limit: Int = 100, cursor: String? = nil) async throws
        -> Graph.ListNotifications.Reply
    {
        try await client.call(
            Graph.ListNotifications.self,
            .init(recipientId: user.id, page: .init(limit: limit, cursor: cursor)))
    }

    /// Every notification of `user`, newest first, through all pages of `pageSize`.
    func allNotifications(_ user: Identity, pageSize: Int = 20) async throws -> [Graph.Notification] {
        var items: [Graph.Notification] = []
        var cursor: String? = nil
        repeat {
            let page = try await notifications(user, limit: pageSize, cursor: cursor)
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    /// Polls (bounded, 10 s) until `user`'s newest seq reaches `seq`; returns the head seq.
    @discardableResult
    func waitForHead(_ user: Identity, atLeast seq: Int64) async throws -> Int64 {
        let end = Timestamp.nowMs() + 10_000
        while true {
            let reply = try await client.call(
                Graph.NotificationsSince.self, .init(recipientId: user.id, afterSeq: 0, limit: 1))
            if reply.headSeq >= seq || Timestamp.nowMs() > end { return reply.headSeq }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A post-liked event from `liker` on `owner`'s post.
    func like(_ liker: Identity, _ owner: Identity, post: String) async throws {
        try await profile.emit(
            Profile.PostLiked(
                postId: post, ownerId: owner.id, userId: liker.id,
                thumbnailURL: "https://img.example/\(post).jpg"))
    }
}
