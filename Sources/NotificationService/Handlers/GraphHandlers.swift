import Shared

/// The follow graph: `graph.follow`, `graph.unfollow`, `graph.header`, `graph.list_edges`,
/// `graph.follow_states`. Usernames resolve through the identity replica (AuthService on a miss).
struct GraphHandlers: Sendable {
    let replica: IdentityReplica
    let follows: any FollowStore

    func register(on host: ServiceHost) {
        host.on(Graph.Follow.self) { request, _ in
            let followee = try await user(named: request.username)
            guard followee.id != request.followerId else {
                throw ServiceError.unprocessable("cannot_follow_self", "you cannot follow yourself")
            }
            guard let follower = try await replica.identity(id: request.followerId) else {
                throw ServiceError.notFound("user")
            }
            return try await follows.follow(
                follower: UserRef(id: follower.id, username: follower.username), followee: followee,
                notifyPosts: request.notifyPosts, now: Timestamp.now())
        }
        host.on(Graph.Unfollow.self) { request, _ in
            let followee = try await user(named: request.username)
            guard followee.id != request.followerId else {
                throw ServiceError.unprocessable("cannot_follow_self", "you cannot unfollow yourself")
            }
            try await follows.unfollow(followerId: request.followerId, followeeId: followee.id)
            return .init(followState: .notFollowing)
        }
        host.on(Graph.Header.self) { request, _ in
            try await follows.header(userId: try await user(named: request.username).id, viewerId: request.viewerId)
        }
        host.on(Graph.ListEdges.self) { request, _ in
            try await follows.edges(
                userId: try await user(named: request.username).id, following: request.following,
                viewerId: request.viewerId, page: request.page)
        }
        host.on(Graph.FollowStates.self) { request, _ in
            .init(states: try await follows.states(viewerId: request.viewerId, userIds: Array(request.userIds.prefix(1_000))))
        }
    }

    /// The user named `username`. - Throws: 404 `not_found` when AuthService does not know it.
    func user(named username: String) async throws -> UserRef {
        guard let identity = try await replica.identity(username: username) else {
            throw ServiceError.notFound("user \(username)")
        }
        return UserRef(id: identity.id, username: identity.username)
    }
}
