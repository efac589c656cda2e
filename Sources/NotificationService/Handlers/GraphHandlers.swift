import Shared

/// Registers the handlers of the `Graph` namespace (follow graph and notifications).
struct GraphHandlers: Sendable {
    let database: Database
    let users: UserDirectory

    func register(on host: ServiceHost) {
        let database = self.database
        let users = self.users

        /// Resolves a username to a user, 404 `not_found` when AuthService does not know it.
        @Sendable func target(_ username: String) async throws -> UserRef {
            guard let user = try await users.byUsername(username) else {
                throw ServiceError.notFound("user \(username)")
            }
            return user
        }

        host.on(Graph.Follow.self) { request, _ in
            let (named, withId) = try await users.resolve(
                username: request.username, id: request.followerId)
            guard let followee = named else { throw ServiceError.notFound("user \(request.username)") }
            guard followee.id != request.followerId else {
                throw ServiceError.unprocessable("cannot_follow_self", "you cannot follow yourself")
            }
            guard let follower = withId else { throw ServiceError.notFound("user") }
            let now = Timestamp.now()
            return try await database.write { tx in
                try FollowGraph.follow(
                    follower: follower, followee: followee, notifyPosts: request.notifyPosts, now: now, in: tx
                )
            }
        }

        host.on(Graph.Unfollow.self) { request, _ in
            let followee = try await target(request.username)
            guard followee.id != request.followerId else {
                throw ServiceError.unprocessable("cannot_follow_self", "you cannot unfollow yourself")
            }
            try await database.write { tx in
                try FollowGraph.unfollow(followerId: request.followerId, followeeId: followee.id, in: tx)
            }
            return .init(followState: .notFollowing)
        }

        host.on(Graph.Header.self) { request, _ in
            let user = try await target(request.username)
            return try await database.read { c in
                try c.snapshot {
                    let counts = try FollowGraph.counts(user.id, on: c)
                    return Graph.Header.Reply(
                        userId: user.id, followers: counts.followers, following: counts.following,
                        followState: try FollowGraph.state(viewer: request.viewerId, toward: user.id, on: c))
                }
            }
        }

        host.on(Graph.ListEdges.self) { request, _ in
            let user = try await target(request.username)
            return try await database.read { c in
                try c.snapshot {
                    try FollowGraph.list(
                        user.id, following: request.following, viewerId: request.viewerId, page: request.page,
                        on: c)
                }
            }
        }

        host.on(Graph.FollowStates.self) { request, _ in
            try await database.read { c in
                try c.snapshot {
                    .init(
                        states: try FollowGraph.states(
                            viewer: request.viewerId, userIds: request.userIds, on: c))
                }
            }
        }

        host.on(Graph.ListNotifications.self) { request, _ in
            try await database.read { c in
                try c.snapshot {
                    try NotificationStore.list(request.recipientId, page: request.page, on: c)
                }
            }
        }

        host.on(Graph.NotificationsSince.self) { request, _ in
            try await database.read { c in
                try c.snapshot {
                    try NotificationStore.since(
                        request.recipientId, afterSeq: request.afterSeq, limit: request.limit, on: c)
                }
            }
        }

        host.on(Graph.MarkRead.self) { request, _ in
            let unread = try await database.write { tx in
                try NotificationStore.markRead(request.recipientId, upToSeq: request.upToSeq, in: tx)
            }
            return .init(unreadCount: unread)
        }
    }
}
