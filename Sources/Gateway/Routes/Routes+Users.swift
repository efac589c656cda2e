import Foundation
import Shared

/// The profile screen: header, grid and tagged tabs, follow lists, follow/unfollow.
extension Gateway {
    /// `GET /v1/users/{username}` → `{user, counts: {followers, following, posts}, followState}`:
    /// ProfileService and NotificationService asked at the same time.
    func profileHeader(_ call: Call) async throws -> HTTPResponse {
        let username = call.param("username")
        async let profileHalf = profile.call(Profile.Header.self, .init(username: username))
        async let graphHalf = graph.call(
            Graph.Header.self, .init(viewerId: call.userId, username: username))
        let p = try await profileHalf
        let g: Graph.Header.Reply
        do {
            g = try await graphHalf
        } catch let error as ServiceError where error.status == 404 {
            // NotificationService has not seen this account yet (its replica follows AuthService's events).
            g = .init(
                userId: p.user.id, followers: 0, following: 0,
                followState: Shapes.fallbackState(viewer: call.userId, userId: p.user.id))
        }
        return reply(
            200,
            [
                "user": Shapes.publicUser(p.user),
                "counts": ["followers": g.followers, "following": g.following, "posts": p.postCount],
                "followState": g.followState.rawValue,
            ])
    }

    /// `GET /v1/users/{username}/posts` and `/tagged` → page of `Post`.
    func listPosts(_ call: Call, tagged: Bool) async throws -> HTTPResponse {
        let page = try call.page()
        let result = try await profile.call(
            Profile.ListPosts.self,
            .init(viewerId: call.userId, username: call.param("username"), tagged: tagged, page: page))
        return reply(200, Shapes.page(result.items.map(Shapes.post), nextCursor: result.nextCursor))
    }

    /// `PUT /v1/users/{username}/follow` `{notifyPosts?}` → `{followState, notifyPosts}`.
    func follow(_ call: Call) async throws -> HTTPResponse {
        let body = try call.body()
        try body.allowOnly(["notifyPosts"])
        let notify = try body.optionalBool("notifyPosts")
        let result = try await graph.call(
            Graph.Follow.self,
            .init(followerId: call.userId, username: call.param("username"), notifyPosts: notify))
        return reply(
            200, ["followState": result.followState.rawValue, "notifyPosts": result.notifyPosts])
    }

    /// `DELETE /v1/users/{username}/follow` → `{followState: "not_following"}`.
    func unfollow(_ call: Call) async throws -> HTTPResponse {
        let result = try await graph.call(
            Graph.Unfollow.self, .init(followerId: call.userId, username: call.param("username")))
        return reply(200, ["followState": result.followState.rawValue])
    }

    /// `GET /v1/users/{username}/followers` and `/following` → page of `{user, followState}`:
    /// one `graph.list_edges`, then one `profile.users_by_ids` for the page.
    func listEdges(_ call: Call, following: Bool) async throws -> HTTPResponse {
        let page = try call.page()
        let edges = try await graph.call(
            Graph.ListEdges.self,
            .init(
                viewerId: call.userId, username: call.param("username"), following: following, page: page))
        let users = try await usersById(edges.items.map(\.userId))
        let items = edges.items.compactMap { e in
            users[e.userId].map { Shapes.userEntry($0, e.followState) }
        }
        return reply(200, Shapes.page(items, nextCursor: edges.nextCursor))
    }

    /// One batch lookup of public users, by id (unknown ids left out).
    func usersById(_ ids: [String]) async throws -> [String: PublicUser] {
        var unique: [String] = []
        var seen = Set<String>()
        for id in ids where seen.insert(id).inserted { unique.append(id) }
        if unique.isEmpty { return [:] }
        let reply = try await profile.call(Profile.UsersByIds.self, .init(ids: unique))
        let users = Dictionary(reply.users.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        recentUsers.withLock { cache in
            if cache.count > 50_000 { cache.removeAll() }
            cache.merge(users) { _, new in new }
        }
        return users
    }
}
