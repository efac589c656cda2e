import BackendKit
import Messages
import Wire

/// The follow graph: `notification.follow`, `notification.unfollow`, `notification.header`, `notification.list_edges`,
/// `notification.follow_states`, and its privacy and safety: `notification.set_block`,
/// `notification.set_mute`, `notification.list_safety`, `notification.answer_follow_request`,
/// `notification.remove_follower`. Usernames resolve through the identity replica (AuthService on
/// a miss).
struct GraphHandlers: Sendable {
    let replica: IdentityReplica
    let follows: any FollowStore
    let safety: SafetyStore

    func register(on host: ServiceHost) {
        host.on(Notifications.SetBlock.self) { request, _ in
            let target = try await other(request.username, of: request.userId, selfCode: .cannotBlockSelf, "block")
            let blocking = try await safety.setBlock(
                user: try await me(request.userId), target: target, blocking: request.blocking, nowMs: Timestamp.nowMs())
            return .init(blocking: blocking)
        }
        host.on(Notifications.SetMute.self) { request, _ in
            let target = try await other(request.username, of: request.userId, selfCode: .cannotMuteSelf, "mute")
            let muting = try await safety.setMute(
                user: try await me(request.userId), target: target, muting: request.muting, nowMs: Timestamp.nowMs())
            return .init(muting: muting)
        }
        host.on(Notifications.ListSafety.self) { request, _ in
            try await safety.list(request.list, userId: request.userId, page: request.page)
        }
        host.on(Notifications.AnswerFollowRequest.self) { request, _ in
            try await safety.answer(
                user: try await me(request.userId), requester: try await user(named: request.username),
                accept: request.accept, nowMs: Timestamp.nowMs())
            return Empty()
        }
        host.on(Notifications.RemoveFollower.self) { request, _ in
            let follower = try await user(named: request.username)
            try await follows.unfollow(followerId: follower.id, followeeId: request.userId)
            return Empty()
        }
        host.on(Notifications.Follow.self) { request, _ in try await follow(request) }
        host.on(Notifications.Unfollow.self) { request, _ in try await unfollow(request) }
        host.on(Notifications.Header.self) { request, _ in try await header(request) }
        host.on(Notifications.ListEdges.self) { request, _ in try await listEdges(request) }
        host.on(Notifications.FollowStates.self) { request, _ in try await followStates(request) }
    }

    /// Follows `request.username` (idempotent; `notifyPosts` nil keeps the current flag).
    /// - Throws: 404 `not_found` for an unknown followee or follower, 422 `cannot_follow_self`.
    func follow(_ request: Notifications.Follow.Request) async throws -> Notifications.Follow.Reply {
        let followee = try await user(named: request.username)
        guard followee.id != request.followerId else {
            throw ServiceError.unprocessable(.cannotFollowSelf, "you cannot follow yourself")
        }
        guard let follower = try await replica.identity(id: request.followerId) else {
            throw ServiceError.notFound("user")
        }
        return try await follows.follow(
            follower: UserRef(id: follower.id, username: follower.username), followee: followee,
            notifyPosts: request.notifyPosts, nowMs: Timestamp.nowMs())
    }

    /// Unfollows `request.username` (idempotent). - Throws: 404, 422 `cannot_follow_self`.
    func unfollow(_ request: Notifications.Unfollow.Request) async throws -> Notifications.Unfollow.Reply {
        let followee = try await user(named: request.username)
        guard followee.id != request.followerId else {
            throw ServiceError.unprocessable(.cannotFollowSelf, "you cannot unfollow yourself")
        }
        try await follows.unfollow(followerId: request.followerId, followeeId: followee.id)
        return .init(followState: .notFollowing)
    }

    /// Counts and the viewer's relation: one read when the replica knows the name, else after
    /// asking AuthService. - Throws: 404.
    func header(_ request: Notifications.Header.Request) async throws -> Notifications.Header.Reply {
        if let reply = try await follows.header(username: request.username, viewerId: request.viewerId) { return reply }
        return try await follows.header(userId: try await user(named: request.username).id, viewerId: request.viewerId)
    }

    /// Followers or followees, newest edge first. - Throws: 404, 400 `invalid_cursor`.
    func listEdges(_ request: Notifications.ListEdges.Request) async throws -> Notifications.ListEdges.Reply {
        try await follows.edges(
            userId: try await user(named: request.username).id, following: request.following,
            viewerId: request.viewerId, page: request.page)
    }

    /// The viewer's follow state toward each of (at most 1,000 of) `request.userIds`.
    func followStates(_ request: Notifications.FollowStates.Request) async throws -> Notifications.FollowStates.Reply {
        .init(states: try await follows.states(viewerId: request.viewerId, userIds: Array(request.userIds.prefix(1_000))))
    }

    /// The caller `id`. - Throws: 404 `not_found` when AuthService does not know it.
    func me(_ id: String) async throws -> UserRef {
        guard let identity = try await replica.identity(id: id) else { throw ServiceError.notFound("user") }
        return UserRef(id: identity.id, username: identity.username)
    }

    /// The user named `username` as another user than `userId` acts on them (`verb`: block, mute).
    /// - Throws: 404 `not_found`, 422 `selfCode` for oneself.
    func other(_ username: String, of userId: String, selfCode: ServiceErrorCode, _ verb: String) async throws
        -> UserRef
    {
        let target = try await user(named: username)
        guard target.id != userId else { throw ServiceError.unprocessable(selfCode, "you cannot \(verb) yourself") }
        return target
    }

    /// The user named `username`, as others act on them (follow, block, mute, a request, a list).
    /// - Throws: 404 `not_found` when AuthService does not know it, or when the account is
    ///   suspended, being deleted or erased (API.md: as for an unknown user; `AccountStates`).
    func user(named username: String) async throws -> UserRef {
        guard let identity = try await replica.identity(username: username) else {
            throw ServiceError.notFound("user \(username)")
        }
        if try await replica.database.read({ try AccountStates.isHidden(identity.key, on: $0) }) {
            throw ServiceError.notFound("user \(username)")
        }
        return UserRef(id: identity.id, username: identity.username)
    }
}
