import Messages
import Wire

/// The profile screen: header, grid and tagged tabs, follow lists, follow and unfollow
/// (ProfileService and NotificationService).
struct UsersController: Controller {
    let profile: any ServiceBackend
    let notification: any ServiceBackend
    let users: UserLookup

    func register(_ routes: inout RouteCollection) {
        routes.add(.get, "/v1/users/{username}") { try await header($0) }
        routes.add(.get, "/v1/users/{username}/posts") { try await posts($0, tagged: false) }
        routes.add(.get, "/v1/users/{username}/tagged") { try await posts($0, tagged: true) }
        routes.add(.put, "/v1/users/{username}/follow", body: .json) { try await follow($0) }
        routes.add(.delete, "/v1/users/{username}/follow") { request in
            let result = try await notification.call(
                Notifications.Unfollow.self,
                .init(followerId: try request.userId, username: try request.parameters.require("username")))
            return try .json(FollowStateShape(followState: result.followState))
        }
        routes.add(.get, "/v1/users/{username}/followers") { try await edges($0, following: false) }
        routes.add(.get, "/v1/users/{username}/following") { try await edges($0, following: true) }
    }

    /// `GET /v1/users/{username}` → `{user, counts, followState}`: both services asked at once.
    func header(_ request: Request) async throws -> HTTPResponse {
        let username = try request.parameters.require("username")
        let viewer = try request.userId
        async let profileHalf = profile.call(Profile.Header.self, .init(username: username))
        async let graphHalf = notification.call(Notifications.Header.self, .init(viewerId: viewer, username: username))
        let p = try await profileHalf
        let g: Notifications.Header.Reply
        do {
            g = try await graphHalf
        } catch let error as ServiceError where error.status == 404 {
            // NotificationService has not seen this account yet (its replica follows AuthService's events).
            g = .init(userId: p.user.id, followers: 0, following: 0, followState: viewer == p.user.id ? .self : .notFollowing)
        }
        return try .json(
            ProfileHeaderShape(
                user: p.user, counts: CountsShape(followers: g.followers, following: g.following, posts: p.postCount),
                followState: g.followState))
    }

    /// `GET /v1/users/{username}/posts` and `/tagged` → page of `Post`.
    func posts(_ request: Request, tagged: Bool) async throws -> HTTPResponse {
        try .json(
            try await profile.call(
                Profile.ListPosts.self,
                .init(
                    viewerId: try request.userId, username: try request.parameters.require("username"), tagged: tagged,
                    page: try request.page())))
    }

    /// `PUT /v1/users/{username}/follow` `{notifyPosts?}` → `{followState, notifyPosts}`.
    func follow(_ request: Request) async throws -> HTTPResponse {
        let body = try request.decode(FollowBody.self)
        return try .json(
            try await notification.call(
                Notifications.Follow.self,
                .init(
                    followerId: try request.userId, username: try request.parameters.require("username"),
                    notifyPosts: body.notifyPosts)))
    }

    /// `GET /v1/users/{username}/followers` and `/following` → page of `{user, followState}`.
    func edges(_ request: Request, following: Bool) async throws -> HTTPResponse {
        let edges = try await notification.call(
            Notifications.ListEdges.self,
            .init(
                viewerId: try request.userId, username: try request.parameters.require("username"), following: following,
                page: try request.page()))
        let found = try await users.users(edges.items.map(\.userId))
        return try .json(
            PageShape(
                items: edges.items.compactMap { e in found[e.userId].map { UserEntryShape(user: $0, followState: e.followState) }
                },
                nextCursor: edges.nextCursor))
    }

    /// `PUT /v1/users/{username}/follow`'s body: `notifyPosts` turns post notifications on or
    /// off (absent: left as it is, off for a new follow).
    struct FollowBody: Decodable {
        var notifyPosts: Bool?
    }
}
