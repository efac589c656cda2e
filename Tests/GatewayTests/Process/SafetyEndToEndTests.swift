import Foundation
import Harness
import Messages
import Support
import TestSupport
import Testing
import Wire

/// Privacy and safety (API.md; issue 39) through the four real executables, on either engine:
/// blocks, mutes, private accounts with follow requests, removing a follower, the header's
/// relations, and what a hostile client tries. ProfileService enforces blocks and privacy from
/// its replica of the graph, fed by NotificationService's events: where a check depends on it,
/// the test waits for the replica (`eventually`) and prints how long that took after the answer
/// that changed the graph (the consistency window docs/privacy.md states).
@Suite(.serialized)
struct SafetyEndToEndTests {
    /// A registered user: session token, id and username.
    struct User {
        var token: String
        var id: String
        var name: String
    }

    let cluster: Cluster
    let http: HTTPClient
    let tag = RandomID.make().prefix(6)

    init() async throws {
        cluster = try await EndToEndTests.startCluster()
        http = HTTPClient(port: cluster.gatewayPort)
    }

    func user(_ suffix: String) throws -> User {
        let (token, object) = try EndToEndTests.register(http, "s\(tag)\(suffix)")
        return User(token: token, id: object["id"] as? String ?? "", name: object["username"] as? String ?? "")
    }

    @discardableResult
    func call(_ method: String, _ path: String, _ user: User, _ json: [String: Any]? = nil) throws -> HTTPResponse {
        try http.request(method, path, token: user.token, json: json ?? (["PUT", "PATCH", "POST"].contains(method) ? [:] : nil))
    }

    func status(_ method: String, _ path: String, _ user: User, _ json: [String: Any]? = nil) throws -> Int {
        try call(method, path, user, json).status
    }

    /// The header of `of` as `viewer` sees it.
    func header(_ viewer: User, _ of: User) throws -> HTTPResponse { try call("GET", "/v1/users/\(of.name)", viewer) }

    func counts(_ viewer: User, _ of: User) throws -> (followers: Int, following: Int) {
        let counts = try header(viewer, of).object["counts"] as? [String: Any] ?? [:]
        return (counts["followers"] as? Int ?? -1, counts["following"] as? Int ?? -1)
    }

    /// `user`'s notifications (type, actor's username).
    func notifications(_ user: User) throws -> [(type: String, actor: String)] {
        try GroupedNotificationTests.flat(http, user.token).map {
            ($0["type"] as? String ?? "", ($0["actor"] as? [String: Any])?["username"] as? String ?? "")
        }
    }

    /// Waits until `check` holds, and returns the ms since `since` (a monotonic time).
    func window(_ what: String, since: UInt64, _ check: () throws -> Bool) async throws -> Double {
        try await eventually(what, intervalMs: 2) { try check() }
        return Double(DispatchTime.now().uptimeNanoseconds - since) / 1e6
    }

    @Test func aBlockEndsFollowsHidesTheBlockerAndSilencesTheBlockedUser() async throws {
        defer { cluster.stopAll() }
        let (alice, bob, carol) = (try user("a"), try user("b"), try user("c"))
        let post = try EndToEndTests.createPosts(http, alice.token, count: 1)[0]
        #expect(try status("PUT", "/v1/users/\(alice.name)/follow", bob) == 200)
        #expect(try status("PUT", "/v1/users/\(bob.name)/follow", alice) == 200)
        #expect(try status("PUT", "/v1/posts/\(post)/like", bob) == 200)
        #expect(try status("POST", "/v1/posts/\(post)/comments", bob, ["text": "hi"]) == 201)
        try await eventually("bob's like and comment notified alice") {
            try notifications(alice).filter { $0.actor == bob.name }.count == 3
        }
        #expect(try counts(carol, alice) == (1, 1) && counts(carol, bob) == (1, 1))

        // Hostile: oneself, an unknown user.
        let selfBlock = try call("PUT", "/v1/users/\(alice.name)/block", alice)
        #expect(selfBlock.status == 422 && selfBlock.object["code"] as? String == "cannot_block_self")
        #expect(try status("PUT", "/v1/users/nobody\(tag)/block", alice) == 404)

        // Alice blocks bob: the follows both ways end, the notifications between them go.
        let blocked = try call("PUT", "/v1/users/\(bob.name)/block", alice)
        let answered = DispatchTime.now().uptimeNanoseconds
        #expect(blocked.status == 200 && blocked.object["blocking"] as? Bool == true)
        #expect(try status("PUT", "/v1/users/\(bob.name)/block", alice) == 200)  // idempotent
        #expect(try counts(carol, alice) == (0, 0) && counts(carol, bob) == (0, 0))
        #expect(try notifications(alice).filter { $0.actor == bob.name }.isEmpty)
        #expect(try notifications(bob).filter { $0.actor == alice.name }.isEmpty)
        let aliceHeader = try header(alice, bob).object
        #expect(aliceHeader["blocking"] as? Bool == true && aliceHeader["followState"] as? String == "not_following")
        // To bob, alice does not exist: header, grid, tagged tab, lists, the post, its likes and
        // comments, following her. The header answers from NotificationService at once; the
        // rest from ProfileService's replica, once the block's event reached it.
        #expect(try header(bob, alice).status == 404)
        let ms = try await window("ProfileService hides alice's grid from bob", since: answered) {
            try status("GET", "/v1/users/\(alice.name)/posts", bob) == 404
        }
        print("block → ProfileService enforces it: \(String(format: "%.1f", ms)) ms after the block's answer")
        for path in [
            "/v1/users/\(alice.name)/tagged", "/v1/users/\(alice.name)/followers", "/v1/users/\(alice.name)/following",
            "/v1/posts/\(post)", "/v1/posts/\(post)/likes", "/v1/posts/\(post)/comments",
        ] {
            #expect(try status("GET", path, bob) == 404, "\(path)")
        }
        #expect(try status("PUT", "/v1/users/\(alice.name)/follow", bob) == 404)
        #expect(try status("PUT", "/v1/posts/\(post)/like", bob) == 404)
        #expect(try status("POST", "/v1/posts/\(post)/comments", bob, ["text": "hello?"]) == 404)
        let tagging = try call(
            "POST", "/v1/posts", bob,
            [
                "postType": "photo", "mediaURL": "https://images.example.com/1.jpg",
                "thumbnailURL": "https://images.example.com/1.jpg", "taggedUsernames": [alice.name],
            ])
        #expect(tagging.status == 400, "\(tagging.text)")
        // Alice's own actions toward bob wait for an unblock.
        #expect(try call("PUT", "/v1/users/\(bob.name)/follow", alice).object["code"] as? String == "blocking")
        // Bob's old like stays on the post, but he leaves the lists alice sees.
        let likes = try call("GET", "/v1/posts/\(post)/likes", alice).object["items"] as? [[String: Any]] ?? []
        #expect(likes.isEmpty)
        // Nothing bob does reaches alice: a like by carol marks the end of what was sent.
        #expect(try status("PUT", "/v1/posts/\(post)/like", carol) == 200)
        try await eventually("carol's like notified alice") { try notifications(alice).contains { $0.actor == carol.name } }
        #expect(try notifications(alice).filter { $0.actor == bob.name }.isEmpty)
        let blocks = try call("GET", "/v1/me/blocks", alice).object["items"] as? [[String: Any]] ?? []
        #expect(blocks.map { $0["username"] as? String } == [bob.name])

        // Unblock: visibility again, not the follows.
        #expect(try call("DELETE", "/v1/users/\(bob.name)/block", alice).object["blocking"] as? Bool == false)
        try await eventually("bob sees alice's grid again") {
            try status("GET", "/v1/users/\(alice.name)/posts", bob) == 200
        }
        #expect(try header(bob, alice).object["followState"] as? String == "not_following")
        #expect(try counts(carol, alice) == (0, 0))
    }

    @Test func aMuteSilencesAUserAndNobodyIsTold() async throws {
        defer { cluster.stopAll() }
        let (alice, dave) = (try user("a"), try user("d"))
        let posts = try EndToEndTests.createPosts(http, alice.token, count: 2)
        #expect(try call("PUT", "/v1/users/\(alice.name)/mute", alice).object["code"] as? String == "cannot_mute_self")
        #expect(try call("PUT", "/v1/users/\(dave.name)/mute", alice).object["muting"] as? Bool == true)
        let daveView = try header(dave, alice).object
        #expect(daveView["muting"] as? Bool == false && daveView["blocking"] as? Bool == false)
        #expect(try header(alice, dave).object["muting"] as? Bool == true)
        #expect(try status("PUT", "/v1/posts/\(posts[0])/like", dave) == 200)
        #expect(try status("PUT", "/v1/users/\(alice.name)/follow", dave) == 200)
        // Unmuted, the next like notifies: and marks that the earlier ones were applied.
        #expect(try call("DELETE", "/v1/users/\(dave.name)/mute", alice).object["muting"] as? Bool == false)
        #expect(try status("PUT", "/v1/posts/\(posts[1])/like", dave) == 200)
        try await eventually("the like after the unmute notified alice") { try notifications(alice).count == 1 }
        #expect(try notifications(alice).map(\.type) == ["like"])
        #expect((try call("GET", "/v1/me/mutes", alice).object["items"] as? [Any])?.isEmpty == true)
    }

    @Test func aPrivateAccountsFollowersAreTheOnesItAccepts() async throws {
        defer { cluster.stopAll() }
        let (alice, dave, erin, fay, gus, hal) = (
            try user("a"), try user("d"), try user("e"), try user("f"), try user("g"), try user("h")
        )
        let post = try EndToEndTests.createPosts(http, alice.token, count: 1)[0]
        let me = try call("PATCH", "/v1/me/profile", alice, ["private": true]).object
        #expect(me["private"] as? Bool == true)
        #expect((try header(dave, alice).object["user"] as? [String: Any])?["private"] as? Bool == true)
        // A follow is a request; the owner is told.
        let requested = try call("PUT", "/v1/users/\(alice.name)/follow", dave).object
        #expect(requested["followState"] as? String == "requested")
        #expect(try header(dave, alice).object["followState"] as? String == "requested")
        try await eventually("alice's follow_request notification") {
            try notifications(alice).map(\.type) == ["follow_request"]
        }
        // The header answers; the rest is 403 private_account for a non-follower.
        #expect(try header(dave, alice).status == 200)
        try await eventually("ProfileService knows alice is private") {
            try status("GET", "/v1/users/\(alice.name)/posts", dave) == 403
        }
        for path in [
            "/v1/users/\(alice.name)/tagged", "/v1/users/\(alice.name)/followers", "/v1/posts/\(post)",
            "/v1/posts/\(post)/likes", "/v1/posts/\(post)/comments",
        ] {
            let r = try call("GET", path, dave)
            #expect(r.status == 403 && r.object["code"] as? String == "private_account", "\(path): \(r.text)")
        }
        #expect(try status("PUT", "/v1/posts/\(post)/like", dave) == 403)
        let list = try call("GET", "/v1/me/follow-requests", alice).object["items"] as? [[String: Any]] ?? []
        #expect(list.map { ($0["user"] as? [String: Any])?["username"] as? String } == [dave.name])
        #expect(list.first?["createdAt"] is String)

        // Accepted: a follow (counts), dave told; he sees the grid once ProfileService knows.
        #expect(try status("POST", "/v1/me/follow-requests/\(dave.name)/accept", alice) == 204)
        let answered = DispatchTime.now().uptimeNanoseconds
        #expect(try status("POST", "/v1/me/follow-requests/\(dave.name)/accept", alice) == 404)  // answered already
        #expect(try header(dave, alice).object["followState"] as? String == "following")
        #expect(try counts(alice, alice).followers == 1)
        let ms = try await window("dave sees alice's grid", since: answered) {
            try status("GET", "/v1/users/\(alice.name)/posts", dave) == 200
        }
        print("accept → ProfileService shows the grid: \(String(format: "%.1f", ms)) ms after the accept's answer")
        try await eventually("dave's follow_accepted notification") {
            try notifications(dave).map(\.type) == ["follow_accepted"]
        }
        #expect(try notifications(alice).map(\.type) == ["follow"])

        // Declined, withdrawn: no request, no notification left.
        #expect(try call("PUT", "/v1/users/\(alice.name)/follow", erin).object["followState"] as? String == "requested")
        #expect(try status("POST", "/v1/me/follow-requests/\(erin.name)/decline", alice) == 204)
        #expect(try call("PUT", "/v1/users/\(alice.name)/follow", fay).object["followState"] as? String == "requested")
        #expect(try call("DELETE", "/v1/users/\(alice.name)/follow", fay).object["followState"] as? String == "not_following")
        #expect(try status("POST", "/v1/me/follow-requests/\(fay.name)/accept", alice) == 404)  // withdrawn
        #expect(try notifications(alice).map(\.type) == ["follow"])
        #expect((try call("GET", "/v1/me/follow-requests", alice).object["items"] as? [Any])?.isEmpty == true)

        // Switching private off accepts what is pending.
        #expect(try call("PUT", "/v1/users/\(alice.name)/follow", gus).object["followState"] as? String == "requested")
        #expect(try call("PATCH", "/v1/me/profile", alice, ["private": false]).object["private"] as? Bool == false)
        try await eventually("gus's request accepted") {
            try header(gus, alice).object["followState"] as? String == "following"
        }
        #expect(try counts(alice, alice).followers == 2)

        // A follower removed: both counts, nobody told.
        #expect(try status("DELETE", "/v1/me/followers/\(gus.name)", alice) == 204)
        #expect(try counts(alice, alice).followers == 1 && counts(alice, gus).following == 0)
        #expect(try header(gus, alice).object["followState"] as? String == "not_following")
        // (gus was told of the accept when alice went public; of the removal, nothing.)
        #expect(try notifications(gus).filter { $0.actor == alice.name }.map(\.type) == ["follow_accepted"])
        // followsYou from the other side.
        #expect(try status("PUT", "/v1/users/\(hal.name)/follow", alice) == 200)
        #expect(try header(hal, alice).object["followsYou"] as? Bool == true)
    }

    /// A follow request to a private account, then a block: the block wins, nothing remains.
    @Test func aRequestThenABlockLeavesNothing() async throws {
        defer { cluster.stopAll() }
        let (alice, bob) = (try user("a"), try user("b"))
        #expect(try status("PATCH", "/v1/me/profile", alice, ["private": true]) == 200)
        try await eventually("NotificationService knows alice is private") {
            try header(bob, alice).object["user"].flatMap { ($0 as? [String: Any])?["private"] as? Bool } == true
                && call("PUT", "/v1/users/\(alice.name)/follow", bob).object["followState"] as? String == "requested"
        }
        #expect(try status("PUT", "/v1/users/\(alice.name)/block", bob) == 200)
        #expect((try call("GET", "/v1/me/follow-requests", alice).object["items"] as? [Any])?.isEmpty == true)
        #expect(try notifications(alice).isEmpty)
        #expect(try status("POST", "/v1/me/follow-requests/\(bob.name)/accept", alice) == 404)
        #expect(try header(alice, bob).status == 404)
    }
}
