import Foundation
import Shared
import TestSupport
import Testing

/// The real AuthService and ProfileService on ephemeral ports, with clients to both, and the
/// gateway's registration sequence (`auth.register`, then `profile.create`).
final class ProfileHarness: Sendable {
    let cluster: Cluster
    let context: ZMQContext
    let auth: RPCClient
    let profile: RPCClient

    private init(cluster: Cluster, context: ZMQContext, auth: RPCClient, profile: RPCClient) {
        self.cluster = cluster
        self.context = context
        self.auth = auth
        self.profile = profile
    }

    /// Starts `auth` and `profile` and waits until both answer.
    static func start(environment: [String: String] = [:]) async throws -> ProfileHarness {
        let cluster = Cluster(extraEnvironment: environment)
        try await cluster.start(["auth", "profile"])
        let context = ZMQContext()
        let harness = ProfileHarness(
            cluster: cluster, context: context, auth: try cluster.client("auth", context: context),
            profile: try cluster.client("profile", context: context))
        try await waitUntilReachable(harness.auth)
        try await waitUntilReachable(harness.profile)
        return harness
    }

    /// Registers an account (password `password-123`) and creates its profile, as the gateway does.
    @discardableResult
    func register(
        _ username: String, name: String? = nil, birthDate: String? = nil, gender: String? = nil
    ) async throws -> Me {
        let reply = try await auth.call(
            Auth.Register.self, .init(email: "\(username)@example.com", username: username, password: "password-123"),
            timeoutMs: 10_000)
        return try await profile.call(
            Profile.CreateProfile.self, .init(identity: reply.identity, name: name, birthDate: birthDate, gender: gender))
    }

    /// Creates a photo post with valid URLs.
    @discardableResult
    func post(_ owner: Me, caption: String = "", tagged: [String] = []) async throws -> Profile.Post {
        try await profile.call(
            Profile.CreatePost.self,
            .init(
                ownerId: owner.id, postType: "photo", mediaURL: "https://cdn.example.com/m/\(RandomID.make()).jpg",
                thumbnailURL: "https://cdn.example.com/t/1.jpg", caption: caption, taggedUsernames: tagged))
    }

    /// Every page of a list, following `nextCursor`.
    func allPosts(_ viewer: Me, _ username: String, tagged: Bool = false, limit: Int = 20) async throws -> [Profile.Post] {
        var items: [Profile.Post] = []
        var cursor: String? = nil
        repeat {
            let page = try await profile.call(
                Profile.ListPosts.self,
                .init(viewerId: viewer.id, username: username, tagged: tagged, page: .init(limit: limit, cursor: cursor)))
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    /// The profile's outbox event types, oldest first.
    func eventTypes() async throws -> [String] {
        let reply = try await profile.call(Ops.Replay.self, .init(after: 0, limit: 1_000))
        return try reply.events.map { try WireJSON.decode(EventHeader.self, from: Array($0.utf8)).type }
    }

    deinit {
        auth.shutdown()
        profile.shutdown()
        cluster.stopAll()
    }
}

/// Runs `body` and returns the `ServiceError` it throws, recording an issue if it succeeds or
/// throws something else.
func serviceError<T>(
    _ body: () async throws -> T, sourceLocation: SourceLocation = #_sourceLocation
) async -> ServiceError? {
    do {
        _ = try await body()
        Issue.record("expected a ServiceError, got success", sourceLocation: sourceLocation)
    } catch let error as ServiceError {
        return error
    } catch {
        Issue.record("expected a ServiceError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
