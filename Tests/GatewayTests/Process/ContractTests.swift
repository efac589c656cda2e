import Foundation
import Harness
import TestSupport
import Testing
import Wire

/// The rest of ../shared/API.md that the screen walk does not reach: validation, paging,
/// ownership, stream resume, operations. One cluster for the suite; each test uses its own users.
@Suite(.serialized)
struct ContractTests {
    static let image = "https://images.example.com/p/1.jpg"
    let cluster: Cluster
    let http: HTTPClient

    init() async throws {
        cluster = Cluster()
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        http = HTTPClient(port: cluster.gatewayPort)
    }

    func user(_ prefix: String) throws -> (name: String, token: String) {
        let name = "\(prefix)\(RandomID.make().prefix(8))"
        let (token, _) = try EndToEndTests.register(http, name)
        return (name, token)
    }

    func problem(
        _ r: HTTPResponse, _ status: Int, _ code: String, field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == status, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
        #expect(r.header("content-type")?.hasPrefix("application/problem+json") == true, sourceLocation: sourceLocation)
        #expect(r.object["code"] as? String == code, "code in \(r.text)", sourceLocation: sourceLocation)
        #expect(r.object["status"] as? Int == status, sourceLocation: sourceLocation)
        #expect(r.object["title"] is String && r.object["type"] is String, sourceLocation: sourceLocation)
        if let field {
            let fields = (r.object["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
            #expect(fields.contains(field), "errors in \(r.text)", sourceLocation: sourceLocation)
        }
    }

    /// Every field error of a registration at once, whichever service owns the field, and the
    /// account is not created.
    @Test func registrationReportsEveryFieldErrorAtOnce() throws {
        let name = "r\(RandomID.make().prefix(8))"
        let r = try http.request(
            "POST", "/v1/auth/register",
            json: [
                "email": "not-an-email", "username": name, "password": "short",
                "name": String(repeating: "x", count: 101), "birthDate": "2020-02-30", "gender": "robot",
            ])
        problem(r, 400, "invalid_field")
        let fields = Set(((r.object["errors"] as? [[String: Any]]) ?? []).compactMap { $0["field"] as? String })
        #expect(fields == ["email", "password", "name", "birthDate", "gender"])
        let retry = try http.request(
            "POST", "/v1/auth/register", json: ["email": "\(name)@example.com", "username": name, "password": "long-enough-1"])
        #expect(retry.status == 201, "the refused registration created nothing: \(retry.text)")
    }

    /// `{}` names every required field, and missing members are reported together with the
    /// owners' errors on the members that are there (AuthService's and ProfileService's).
    @Test func registrationNamesEveryMissingAndInvalidField() throws {
        let empty = try http.request("POST", "/v1/auth/register", json: [String: Any]())
        problem(empty, 400, "invalid_field")
        let codes = Dictionary(
            ((empty.object["errors"] as? [[String: Any]]) ?? []).compactMap { e in
                (e["field"] as? String).map { ($0, e["code"] as? String ?? "") }
            }, uniquingKeysWith: { a, _ in a })
        #expect(codes == ["email": "required", "username": "required", "password": "required"], "\(empty.text)")
        let mixed = try http.request(
            "POST", "/v1/auth/register", json: ["email": 5, "password": "short", "gender": "robot"])
        problem(mixed, 400, "invalid_field")
        let fields = Set(((mixed.object["errors"] as? [[String: Any]]) ?? []).compactMap { $0["field"] as? String })
        #expect(fields == ["email", "username", "password", "gender"], "\(mixed.text)")
    }

    @Test func registrationValidationAndConflicts() throws {
        let name = "r\(RandomID.make().prefix(8))"
        problem(
            try http.request(
                "POST", "/v1/auth/register", json: ["email": "not-an-email", "username": name, "password": "long-enough-1"]),
            400, "invalid_email", field: "email")
        problem(
            try http.request(
                "POST", "/v1/auth/register",
                json: ["email": "\(name)@example.com", "username": "x!", "password": "long-enough-1"]),
            400, "invalid_username", field: "username")
        problem(
            try http.request(
                "POST", "/v1/auth/register", json: ["email": "\(name)@example.com", "username": name, "password": "short"]),
            400, "weak_password", field: "password")
        _ = try EndToEndTests.register(http, name)
        problem(
            try http.request(
                "POST", "/v1/auth/register",
                json: ["email": "other\(name)@example.com", "username": name, "password": "long-enough-1"]),
            409, "username_taken")
        problem(
            try http.request(
                "POST", "/v1/auth/register",
                json: ["email": "\(name)@example.com", "username": "o\(name)", "password": "long-enough-1"]),
            409, "email_taken")
    }

    @Test func badInputIsProblemDetailsNeverACrash() throws {
        let (_, token) = try user("b")
        problem(try http.request("GET", "/v1/me"), 401, "unauthorized")
        problem(try http.request("GET", "/v1/me", token: "not-a-token"), 401, "invalid_token")
        // `Bearer` with only whitespace after it carries no token: the same answer as no header.
        problem(try http.request("GET", "/v1/me", headers: ["Authorization": "Bearer  \t "]), 401, "unauthorized")
        problem(
            try http.request(
                "POST", "/v1/posts", token: token, raw: Array("{not json".utf8), headers: ["Content-Type": "application/json"]),
            400, "malformed_json")
        problem(
            try http.request(
                "POST", "/v1/posts", token: token, raw: Array("hello".utf8), headers: ["Content-Type": "text/plain"]), 415,
            "unsupported_media_type")
        problem(
            try http.request(
                "POST", "/v1/posts", token: token, raw: [UInt8](repeating: 32, count: 1_048_577),
                headers: ["Content-Type": "application/json"]),
            413, "payload_too_large")
        problem(
            try http.request("PATCH", "/v1/me/profile", token: token, json: ["bio": "x", "isAdmin": true]), 400, "unknown_field",
            field: "isAdmin")
        problem(try http.request("PATCH", "/v1/me/profile", token: token, json: ["bio": 42]), 400, "invalid_field", field: "bio")
        problem(try http.request("GET", "/v1/notifications?limit=0", token: token), 400, "invalid_field", field: "limit")
        problem(try http.request("GET", "/v1/notifications?limit=101", token: token), 400, "invalid_field", field: "limit")
        problem(try http.request("GET", "/v1/notifications?limit=ten", token: token), 400, "invalid_field", field: "limit")
        problem(try http.request("GET", "/v1/nothing-here", token: token), 404, "not_found")
        problem(
            try http.request(
                "POST", "/v1/posts", token: token,
                json: ["postType": "photo", "mediaURL": "ftp://x/y.jpg", "thumbnailURL": Self.image]),
            400, "invalid_field", field: "mediaURL")
    }

    @Test func followRulesAndCounts() throws {
        let a = try user("f")
        let b = try user("f")
        problem(try http.request("PUT", "/v1/users/\(a.name)/follow", token: a.token, json: [:]), 422, "cannot_follow_self")
        problem(
            try http.request("PUT", "/v1/users/nobody\(RandomID.make().prefix(6))/follow", token: a.token, json: [:]), 404,
            "not_found")
        for _ in 0..<2 {  // idempotent
            let r = try http.request("PUT", "/v1/users/\(b.name)/follow", token: a.token, json: ["notifyPosts": true])
            #expect(r.status == 200 && r.object["notifyPosts"] as? Bool == true)
        }
        #expect(
            (try http.request("GET", "/v1/users/\(b.name)", token: a.token).object["counts"] as? [String: Any])?["followers"]
                as? Int == 1)
        for _ in 0..<2 {
            let r = try http.request("DELETE", "/v1/users/\(b.name)/follow", token: a.token)
            #expect(r.status == 200 && r.object["followState"] as? String == "not_following")
        }
        let header = try http.request("GET", "/v1/users/\(b.name)", token: a.token)
        #expect((header.object["counts"] as? [String: Any])?["followers"] as? Int == 0)
        #expect(header.object["followState"] as? String == "not_following")
        #expect(try http.request("GET", "/v1/users/\(a.name)", token: a.token).object["followState"] as? String == "self")
    }

    @Test func postOwnershipLikesAndComments() throws {
        let owner = try user("p")
        let other = try user("p")
        let post = try http.request(
            "POST", "/v1/posts", token: owner.token,
            json: ["postType": "video", "mediaURL": Self.image, "thumbnailURL": Self.image, "caption": "c"])
        let id = post.object["id"] as? String ?? ""
        #expect(post.status == 201 && post.object["postType"] as? String == "video")
        problem(try http.request("DELETE", "/v1/posts/\(id)", token: other.token), 403, "forbidden")
        _ = try http.request("PUT", "/v1/posts/\(id)/like", token: other.token)
        let seen = try http.request("GET", "/v1/posts/\(id)", token: other.token)
        #expect(seen.object["likedByMe"] as? Bool == true && seen.object["likeCount"] as? Int == 1)
        let likes = try http.request("GET", "/v1/posts/\(id)/likes", token: owner.token)
        let entry = (likes.object["items"] as? [[String: Any]])?.first
        #expect(
            ((entry?["user"] as? [String: Any])?["username"] as? String) == other.name
                && entry?["followState"] as? String == "not_following")
        let unlike = try http.request("DELETE", "/v1/posts/\(id)/like", token: other.token)
        #expect(unlike.object["liked"] as? Bool == false && unlike.object["likeCount"] as? Int == 0)
        for text in ["one", "two", "three"] {
            #expect(try http.request("POST", "/v1/posts/\(id)/comments", token: other.token, json: ["text": text]).status == 201)
        }
        problem(
            try http.request("POST", "/v1/posts/\(id)/comments", token: other.token, json: ["text": ""]), 400, "invalid_field",
            field: "text")
        let comments = try http.request("GET", "/v1/posts/\(id)/comments?limit=2", token: owner.token)
        #expect((comments.object["items"] as? [[String: Any]])?.map { $0["text"] as? String } == ["one", "two"])
        let cursor = comments.object["nextCursor"] as? String ?? ""
        let rest = try http.request("GET", "/v1/posts/\(id)/comments?limit=2&cursor=\(cursor)", token: owner.token)
        #expect((rest.object["items"] as? [[String: Any]])?.map { $0["text"] as? String } == ["three"])
        #expect(rest.object["nextCursor"] is NSNull)
        #expect(try http.request("DELETE", "/v1/posts/\(id)", token: owner.token).status == 204)
        problem(try http.request("GET", "/v1/posts/\(id)", token: owner.token), 404, "not_found")
    }

    @Test func pagingWhileItemsAreAddedNeverRepeatsOrSkips() throws {
        let owner = try user("g")
        var created: [String] = []
        for i in 0..<7 {
            let r = try http.request(
                "POST", "/v1/posts", token: owner.token,
                json: ["postType": "photo", "mediaURL": Self.image, "thumbnailURL": Self.image, "caption": "\(i)"])
            created.append(r.object["id"] as? String ?? "")
        }
        var seen: [String] = []
        var cursor: String? = nil
        repeat {
            let path = "/v1/users/\(owner.name)/posts?limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try http.request("GET", path, token: owner.token)
            seen += (page.object["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            cursor = page.object["nextCursor"] as? String
            // A new post between pages lands before the cursor: never repeated, never skipping older ones.
            _ = try http.request(
                "POST", "/v1/posts", token: owner.token,
                json: ["postType": "photo", "mediaURL": Self.image, "thumbnailURL": Self.image])
        } while cursor != nil
        #expect(seen == created.reversed())
        // A cursor no list gave out is a 400 naming the field, from either service.
        for path in ["/v1/users/\(owner.name)/posts?cursor=garbage", "/v1/notifications?cursor=-5"] {
            let bad = try http.request("GET", path, token: owner.token)
            #expect(bad.status == 400 && bad.object["code"] as? String == "invalid_cursor", "\(path)")
            #expect((bad.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "cursor", "\(path)")
        }
    }

    @Test func streamResumesAfterLastEventIdWithNothingLostOrRepeated() async throws {
        let owner = try user("s")
        let fan = try user("s")
        let post = try http.request(
            "POST", "/v1/posts", token: owner.token,
            json: ["postType": "photo", "mediaURL": Self.image, "thumbnailURL": Self.image])
        let id = post.object["id"] as? String ?? ""
        let first = try SSEClient(port: cluster.gatewayPort, token: owner.token)
        #expect(await first.waitUntilOpen())
        _ = try http.request("PUT", "/v1/posts/\(id)/like", token: fan.token)
        #expect(await first.waitFor(count: 1))
        let lastId = first.events.last?.id ?? ""
        first.close()
        // While disconnected: two more notifications.
        _ = try http.request("POST", "/v1/posts/\(id)/comments", token: fan.token, json: ["text": "a"])
        // The comment's notification is made from an event, the follow's by the request: wait
        // for the first to be stored before making the second, so their order is known.
        try await waitForNotifications(owner.token, count: 2)
        _ = try http.request("PUT", "/v1/users/\(owner.name)/follow", token: fan.token, json: [:])
        let resumed = try SSEClient(port: cluster.gatewayPort, token: owner.token, lastEventId: lastId)
        #expect(await resumed.waitFor(count: 2))
        _ = try http.request("POST", "/v1/posts/\(id)/comments", token: fan.token, json: ["text": "b"])
        #expect(await resumed.waitFor(count: 3))
        #expect(resumed.events.map { $0.json["type"] as? String } == ["comment", "follow", "comment"])
        let ids = resumed.events.compactMap { Int($0.id ?? "") }
        #expect(ids.count == 3 && ids.first! > Int(lastId)! && ids == ids.sorted())
        // ?since= works the same way.
        let since = try SSEClient(port: cluster.gatewayPort, token: owner.token, path: "/v1/notifications/stream?since=\(lastId)")
        #expect(await since.waitFor(count: 3))
        #expect(since.events.compactMap { Int($0.id ?? "") } == ids)
        #expect(since.comments >= 1)  // a comment line is sent at once, then at least every 15 s
    }

    /// Polls the notification list until it holds `count` items (60 s at most).
    func waitForNotifications(_ token: String, count: Int) async throws {
        let deadline = Timestamp.nowMs() + 60_000
        while Timestamp.nowMs() < deadline {
            let list = try http.request("GET", "/v1/notifications", token: token)
            if (list.object["items"] as? [[String: Any]] ?? []).count >= count { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the list never reached \(count) notifications")
    }

    @Test func editProfileUsernameChangeWorksEverywhere() throws {
        let u = try user("u")
        let newName = "n\(RandomID.make().prefix(8))"
        let r = try http.request("PATCH", "/v1/me/profile", token: u.token, json: ["username": newName, "name": "New Name"])
        #expect(r.status == 200 && r.object["username"] as? String == newName)
        problem(try http.request("GET", "/v1/users/\(u.name)", token: u.token), 404, "not_found")
        #expect(try http.request("GET", "/v1/users/\(newName)", token: u.token).status == 200)
        #expect(
            try http.request("POST", "/v1/auth/login", json: ["login": newName, "password": "correct-horse-9"]).status == 200)
        problem(
            try http.request("PATCH", "/v1/me/profile", token: u.token, json: ["gender": "robot"]), 400, "invalid_field",
            field: "gender")
    }

    @Test func operations() async throws {
        #expect(try http.request("GET", "/healthz").object["status"] as? String == "ok")
        var ready = try http.request("GET", "/readyz").status
        let deadline = Timestamp.nowMs() + 60_000
        while ready != 200 && Timestamp.nowMs() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            ready = try http.request("GET", "/readyz").status
        }
        #expect(ready == 200)
        let doc = try http.request("GET", "/openapi.json")
        #expect(doc.object["openapi"] as? String == "3.1.0")
        let metrics = try http.request("GET", "/metrics")
        #expect(metrics.status == 200 && metrics.text.contains("# TYPE"))
    }
}
