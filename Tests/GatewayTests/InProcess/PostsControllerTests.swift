import Messages
import Testing
import Wire

@testable import Gateway

/// Posts, likes and comments in process: the two shapes of a new post, each refusing the
/// other's members; idempotent writes; the likes list with the viewer's follow states.
@Suite struct PostsControllerTests {
    let gateway = InProcessGateway()

    @Test func aPostFromAnUploadTakesOnlyTheUploadsMembers() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.CreateMediaPost.self) { _, _ in Fixtures.post("p1") }
        gateway.profile.on(Profile.CreatePost.self) { _, _ in Fixtures.post("p2") }
        let upload = await gateway.request(
            .post, "/v1/posts", token: token, json: #"{"postType": "photo", "mediaId": "m1", "taggedUsernames": ["bob"]}"#)
        #expect(upload.status == 201 && upload["id"] == .string("p1"))
        #expect(gateway.profile.requests(Profile.CreateMediaPost.self).first?.taggedUsernames == ["bob"])
        let mixed = await gateway.request(
            .post, "/v1/posts", token: token, json: #"{"postType": "photo", "mediaId": "m1", "mediaURL": "https://x"}"#)
        #expect(mixed.code == "unknown_field" && mixed.fields == ["mediaURL"])
        let nullId = await gateway.request(.post, "/v1/posts", token: token, json: #"{"postType": "photo", "mediaId": null}"#)
        #expect(nullId["detail"] == .string("mediaId: must be a string"))
        let urls = await gateway.request(
            .post, "/v1/posts", token: token,
            json: #"{"postType": "photo", "mediaURL": "https://x/1.jpg", "thumbnailURL": "https://x/1t.jpg"}"#)
        #expect(urls.status == 201 && urls["id"] == .string("p2"))
        #expect(gateway.profile.requests(Profile.CreatePost.self).first?.taggedUsernames == [])
        let missing = await gateway.request(.post, "/v1/posts", token: token, json: #"{"postType": "photo", "mediaURL": "x"}"#)
        #expect(missing.fields == ["thumbnailURL"] && missing.fieldCodes == ["required"])
        let tags = await gateway.request(
            .post, "/v1/posts", token: token, json: #"{"postType": "photo", "mediaId": "m1", "taggedUsernames": "bob"}"#)
        #expect(tags["detail"] == .string("taggedUsernames: must be an array of strings"))
    }

    @Test func anIdempotencyKeyMakesTheWriteSafeToSendAgain() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.AddComment.self) { request, _ in
            .init(
                id: "c1", postId: request.postId, author: Fixtures.user("alice"), text: request.text,
                createdAt: "2026-01-01T00:00:00.000Z")
        }
        let keyed = await gateway.request(
            .post, "/v1/posts/p1/comments", token: token, json: #"{"text": "hi"}"#, headers: [("idempotency-key", "k-1")])
        #expect(keyed.status == 201)
        let call = gateway.profile.calls.last
        #expect(call?.idempotent == true && gateway.profile.requests(Profile.AddComment.self).last?.idempotencyKey == "k-1")
        _ = await gateway.request(.post, "/v1/posts/p1/comments", token: token, json: #"{"text": "hi"}"#)
        #expect(gateway.profile.calls.last?.idempotent == false)
        // The key is checked before the body.
        let both = await gateway.request(
            .post, "/v1/posts/p1/comments", token: token, json: #"{"text": 1}"#, headers: [("idempotency-key", "")])
        #expect(both.fields == ["Idempotency-Key"])
    }

    @Test func theLikesListGivesEachUserTheViewersFollowState() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.ListLikes.self) { _, _ in
            .init(items: [Fixtures.user("alice"), Fixtures.user("bob"), Fixtures.user("cy")], nextCursor: nil)
        }
        gateway.notification.on(Notifications.FollowStates.self) { request, _ in
            #expect(request.viewerId == "u-alice" && request.userIds == ["u-alice", "u-bob", "u-cy"])
            return .init(states: ["u-bob": .following])
        }
        let r = await gateway.request(.get, "/v1/posts/p1/likes", token: token)
        guard case .array(let items)? = r["items"] else {
            Issue.record("no items: \(r.text)")
            return
        }
        let states = items.compactMap { item -> String? in
            guard case .object(let o) = item, case .string(let s)? = o["followState"] else { return nil }
            return s
        }
        #expect(states == ["self", "following", "not_following"])
    }
}
