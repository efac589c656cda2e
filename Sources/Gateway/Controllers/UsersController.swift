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
        for blocking in [true, false] {
            routes.add(blocking ? .put : .delete, "/v1/users/{username}/block") { request in
                try .json(
                    try await notification.call(
                        Notifications.SetBlock.self,
                        .init(
                            userId: try request.userId, username: try request.parameters.require("username"), blocking: blocking))
                )
            }
            routes.add(blocking ? .put : .delete, "/v1/users/{username}/mute") { request in
                try .json(
                    try await notification.call(
                        Notifications.SetMute.self,
                        .init(userId: try request.userId, username: try request.parameters.require("username"), muting: blocking))
                )
            }
        }
        routes.add(.get, "/v1/me/blocks") { try await safetyList($0, .blocks, dated: false) }
        routes.add(.get, "/v1/me/mutes") { try await safetyList($0, .mutes, dated: false) }
        routes.add(.get, "/v1/me/follow-requests") { try await safetyList($0, .followRequests, dated: true) }
        for accept in [true, false] {
            routes.add(.post, "/v1/me/follow-requests/{username}/\(accept ? "accept" : "decline")") { request in
                _ = try await notification.call(
                    Notifications.AnswerFollowRequest.self,
                    .init(userId: try request.userId, username: try request.parameters.require("username"), accept: accept))
                return HTTPResponse(status: 204)
            }
        }
        routes.add(.delete, "/v1/me/followers/{username}") { request in
            _ = try await notification.call(
                Notifications.RemoveFollower.self,
                .init(userId: try request.userId, username: try request.parameters.require("username")))
            return HTTPResponse(status: 204)
        }
    }

    /// `GET /v1/me/blocks`, `/v1/me/mutes` (pages of `PublicUser`) and `/v1/me/follow-requests`
    /// (`dated`: pages of `{user, createdAt}`), newest first.
    func safetyList(_ request: Request, _ list: Notifications.SafetyList, dated: Bool) async throws -> HTTPResponse {
        let page = try await notification.call(
            Notifications.ListSafety.self, .init(userId: try request.userId, list: list, page: try request.page()))
        let found = try await users.users(page.items.map(\.userId))
        if dated {
            return try .json(
                PageShape(
                    items: page.items.compactMap { e in found[e.userId].map { DatedUserShape(user: $0, createdAt: e.createdAt) }
                    },
                    nextCursor: page.nextCursor))
        }
        return try .json(PageShape(items: page.items.compactMap { found[$0.userId] }, nextCursor: page.nextCursor))
    }

    /// `GET /v1/users/{username}` → `{user, counts, followState}`: both services asked at once;
    /// either one's 404 is the answer.
    func header(_ request: Request) async throws -> HTTPResponse {
        let username = try request.parameters.require("username")
        let viewer = try request.userId
        async let profileHalf = profile.call(Profile.Header.self, .init(username: username, viewerId: viewer))
        async let graphHalf = notification.call(Notifications.Header.self, .init(viewerId: viewer, username: username))
        let p = try await profileHalf
        // NotificationService's 404 stands: it asks AuthService about an account its replica
        // has not seen yet, so a 404 from it means a block or a hidden account, which it knows
        // before ProfileService's replica does (docs/privacy.md, the window).
        let g = try await graphHalf
        return try .json(
            ProfileHeaderShape(
                user: p.user, counts: CountsShape(followers: g.followers, following: g.following, posts: p.postCount),
                followState: g.followState, blocking: g.blocking, muting: g.muting, followsYou: g.followsYou))
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
