import Messages
import Testing
import Wire

@testable import Gateway

/// The profile screen in process: the header from both services, follow and its body, the
/// follow lists with the users ProfileService knows.
@Suite struct UsersControllerTests {
    let gateway = InProcessGateway()

    @Test func theHeaderJoinsBothServicesAndEitherOnes404IsTheAnswer() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.Header.self) { request, _ in .init(user: Fixtures.user(request.username), postCount: 3) }
        gateway.notification.on(Notifications.Header.self) { request, _ in
            guard request.username == "bob" else { throw ServiceError.notFound("user") }
            return .init(userId: "u-bob", followers: 5, following: 7, followState: .following)
        }
        let bob = await gateway.request(.get, "/v1/users/bob", token: token)
        #expect(bob.status == 200)
        #expect(
            bob["counts"]
                == .object(
                    JSONObject(members: [("followers", .number("5")), ("following", .number("7")), ("posts", .number("3"))])))
        #expect(bob["followState"] == .string("following"))
        // NotificationService's 404 (a block it has applied before ProfileService's replica
        // has) is not covered up with a header of zeros.
        let blocked = await gateway.request(.get, "/v1/users/cy", token: token)
        #expect(blocked.status == 404 && blocked.code == "not_found")
    }

    @Test func followTakesOnlyNotifyPosts() async {
        let token = gateway.signIn("alice")
        gateway.notification.on(Notifications.Follow.self) { request, _ in
            .init(followState: .following, notifyPosts: request.notifyPosts ?? false)
        }
        let r = await gateway.request(.put, "/v1/users/bob/follow", token: token, json: #"{"notifyPosts": true}"#)
        #expect(r.status == 200 && r["notifyPosts"] == .bool(true))
        let sent = gateway.notification.requests(Notifications.Follow.self).first
        #expect(sent?.followerId == "u-alice" && sent?.username == "bob" && sent?.notifyPosts == true)
        #expect(await gateway.request(.put, "/v1/users/bob/follow", token: token).status == 200)
        #expect(gateway.notification.requests(Notifications.Follow.self).last?.notifyPosts == nil)
        let unknown = await gateway.request(.put, "/v1/users/bob/follow", token: token, json: #"{"mute": true}"#)
        #expect(unknown.code == "unknown_field" && unknown.fields == ["mute"])
        #expect(gateway.notification.count(Notifications.Follow.self) == 2)
    }

    @Test func aFollowListLeavesOutUsersProfileServiceDoesNotKnow() async {
        let token = gateway.signIn("alice")
        gateway.notification.on(Notifications.ListEdges.self) { request, _ in
            #expect(request.following == false && request.page.limit == 2)
            return .init(
                items: [.init(userId: "u-bob", followState: .following), .init(userId: "u-gone", followState: .notFollowing)],
                nextCursor: "c2")
        }
        gateway.profile.on(Profile.UsersByIds.self) { request, _ in
            .init(users: request.ids.filter { $0 != "u-gone" }.map { Fixtures.user(String($0.dropFirst(2))) })
        }
        let r = await gateway.request(.get, "/v1/users/alice/followers?limit=2", token: token)
        #expect(r.status == 200 && r["nextCursor"] == .string("c2"))
        guard case .array(let items)? = r["items"] else {
            Issue.record("no items: \(r.text)")
            return
        }
        #expect(items.count == 1)
        let bad = await gateway.request(.get, "/v1/users/alice/followers?limit=0", token: token)
        #expect(bad.status == 400 && bad.fields == ["limit"])
    }
}
