import Foundation
import Harness
import Messages
import ServiceKit
import TestSupport
import Transport
import Wire

/// The real NotificationService executable, fed by in-process fake AuthService and
/// ProfileService producers (so events can be emitted on demand, also while the service is
/// stopped). Every wait is on a condition, with a 60 s deadline.
final class ProcessHarness: @unchecked Sendable {
    // @unchecked: used by one test at a time; `client` is replaced only between its calls.
    let context = ZMQContext()
    let auth: FakeAuth
    let profile: FakeProducer
    let cluster: Cluster
    private(set) var client: RPCClient

    /// - Parameters:
    ///   - answersLookups: false: the service knows users only from auth's events.
    ///   - dns: the service reaches the producers by name (`insta-auth`, `insta-profile`, as
    ///     containers do) and looks the names up on this server.
    init(answersLookups: Bool = true, dns: TestDNSServer? = nil) async throws {
        let directory = makeTemporaryDirectory("notification-process")
        // The stand-ins hold AuthService's and ProfileService's key pairs, as the real ones would.
        auth = try FakeAuth(
            context: context, directory: directory, answersLookups: answersLookups,
            security: try Cluster.security(dataDirectory: directory, context: context, name: "auth"))
        profile = try FakeProducer(
            name: "profile", context: context, directory: directory,
            security: try Cluster.security(dataDirectory: directory, context: context, name: "profile"))
        try auth.start()
        try profile.start()
        // The imports are a load test's setup, served only when allowed (ImportProcessTests use them).
        var environment = auth.environment().merging(profile.environment(prefix: "PROFILE")) { $1 }
        environment["ALLOW_IMPORTS"] = "1"
        if let dns {
            for (key, value) in environment {
                let host = key.hasPrefix("AUTH_") ? "insta-auth" : "insta-profile"
                environment[key] = value.replacingOccurrences(of: "tcp://127.0.0.1:", with: "tcp://\(host):")
            }
            dns.add("insta-auth", address: "127.0.0.1")
            dns.add("insta-profile", address: "127.0.0.1")
        }
        cluster = Cluster(dataDirectory: directory, extraEnvironment: environment)
        if let dns {
            cluster.launchers["notification"] = TestDNSServer.launcher(resolvConf: try dns.resolvConf(in: directory))
        }
        try await cluster.start("notification")
        client = try cluster.client("notification", context: context)
        try await waitUntilReachable(client, timeoutMs: 60_000)
    }

    /// The service's data directory and database file.
    var directory: String { cluster.dataDirectory }

    /// The service's events endpoint.
    var eventsEndpoint: String { cluster.endpoints["notification"]!["events"]! }

    /// Stops the service (SIGTERM) and waits for it to exit.
    func stopService() {
        cluster.stop("notification")
    }

    /// Kills it (SIGKILL, a crash) and waits for it to exit.
    func killService() {
        cluster.kill("notification")
    }

    /// Starts it again on the same ports and data directory.
    func startService() async throws {
        try await launchService()
        try await waitUntilReachable(client, timeoutMs: 60_000)
    }

    /// Starts it again and returns once it printed its ready line (its sockets are bound), with a
    /// new `client`, without waiting for it to answer.
    func launchService() async throws {
        client.shutdown()
        try await cluster.start("notification")
        client = try cluster.client("notification", context: context)
    }

    func shutdown() {
        cluster.stopAll()
        client.shutdown()
        auth.stop()
        profile.stop()
    }

    // MARK: Waiting for the service

    /// Waits until the service applied every event `producer` has written (its subscriber's
    /// `delivered` counter, from `ops.ping`, reaches the producer's head). The counter starts
    /// at 0 with each process, so `since` is what it had applied before this run. Each ping has
    /// a 2 s deadline (a service that does not answer counts as "not yet"), so `seconds` bounds
    /// the wait.
    func waitForEvents(of producer: FakeProducer, since applied: Int64 = 0, seconds: Double = 60) async throws {
        let head = producer.database.currentHead()
        let key = "subscriber.\(producer.name).delivered"
        try await eventually("\(producer.name) events through \(head) applied", within: seconds) {
            do {
                let ping = try await client.call(Ops.Ping.self, Empty(), timeoutMs: 2_000)
                return applied + ping.counters[key, default: 0] >= head
            } catch let error as ServiceError where error.status == 503 || error.status == 504 {
                return false
            }
        }
    }

    /// Waits until `user`'s newest notification seq reaches `seq`.
    func waitForHead(_ user: Identity, atLeast seq: Int64) async throws {
        try await eventually("\(user.username)'s head seq reaches \(seq)") {
            try await since(user, after: 0, limit: 1).headSeq >= seq
        }
    }

    // MARK: Requests

    @discardableResult
    func follow(_ follower: Identity, _ username: String, notifyPosts: Bool? = nil) async throws -> Notifications.Follow.Reply {
        try await client.call(
            Notifications.Follow.self, .init(followerId: follower.id, username: username, notifyPosts: notifyPosts))
    }

    func header(_ viewer: Identity, _ username: String) async throws -> Notifications.Header.Reply {
        try await client.call(Notifications.Header.self, .init(viewerId: viewer.id, username: username))
    }

    func since(_ user: Identity, after seq: Int64, limit: Int = 1_000) async throws -> Notifications.NotificationsSince.Reply {
        try await client.call(Notifications.NotificationsSince.self, .init(recipientId: user.id, afterSeq: seq, limit: limit))
    }

    func notifications(_ user: Identity) async throws -> Notifications.ListNotifications.Reply {
        try await client.call(Notifications.ListNotifications.self, .init(recipientId: user.id, page: .init(limit: 100)))
    }

    /// A like by `liker` on `owner`'s post, from the fake ProfileService.
    func like(_ liker: Identity, _ owner: Identity, post: String, type: String? = nil) async throws {
        try await profile.emit(
            Profile.PostLiked(
                postId: post, ownerId: owner.id, userId: liker.id, thumbnailURL: "https://img.example/\(post).jpg",
                postType: type))
    }
}
