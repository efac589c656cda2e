import Foundation
import Harness
import Messages
import Support
import TestSupport
import Testing
import Wire

/// Deleting a comment and the operator's word list (issue 39, points 5 and 7) over HTTP against
/// the four real executables, on either engine (`TEST_STORAGE_ENGINE`): the comment's
/// notification, its group and the badge follow a deletion by the post's owner; anyone else is
/// 403; commenting again leaves exactly one notification per comment; and with
/// `MODERATION_WORDS_FILE` each of the five fields (username, name, bio, caption, comment text) is
/// refused with 422 `objectionable_content` naming it, while a service whose list cannot be read
/// refuses to start.
///
/// Events are applied asynchronously, so each check after a deletion first waits for a later
/// marker: a like by another account made after the deletion answered. ProfileService publishes
/// in commit order and NotificationService applies in that order, so once the marker's
/// notification is listed, the deletion before it has been applied.
@Suite(.serialized)
struct CommentsAndWordsEndToEndTests {
    typealias Seen = UndoRedoEndToEndTests.Seen

    /// The recipient's state once `done` holds (see `eventually`).
    static func seen(_ http: HTTPClient, _ token: String, until done: @escaping (Seen) -> Bool) async throws -> Seen {
        try await eventuallyValue("the notifications to settle", within: 120) {
            let seen = try Seen(http, token)
            return done(seen) ? seen : nil
        }
    }

    /// Likes `post` as the marker, after unliking it (so each call notifies anew), and returns
    /// when the owner's list shows that like: everything the services did before it is applied.
    static func mark(_ http: HTTPClient, _ owner: String, marker: (name: String, token: String), post: String) async throws
        -> Seen
    {
        let before = try Seen(http, owner).of("like", by: marker.name).first?["seq"] as? Int ?? 0
        #expect(try http.request("DELETE", "/v1/posts/\(post)/like", token: marker.token).status == 200)
        #expect(try http.request("PUT", "/v1/posts/\(post)/like", token: marker.token).status == 200)
        return try await seen(http, owner) { ($0.of("like", by: marker.name).first?["seq"] as? Int ?? 0) > before }
    }

    static func comment(_ http: HTTPClient, _ token: String, post: String, _ text: String) throws -> String {
        let r = try http.request("POST", "/v1/posts/\(post)/comments", token: token, json: ["text": text])
        #expect(r.status == 201, "\(r.status) \(r.text)")
        return r.object["id"] as? String ?? ""
    }

    @Test func aCommentDeletedByThePostsOwnerTakesItsNotificationGroupAndBadgeWithIt() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (owner, _) = try EndToEndTests.register(http, "s\(tag)o")
        let authorName = "s\(tag)a"
        let (author, _) = try EndToEndTests.register(http, authorName)
        let (third, _) = try EndToEndTests.register(http, "s\(tag)t")
        let markerName = "s\(tag)m"
        let marker = (name: markerName, token: try EndToEndTests.register(http, markerName).0)
        let posts = try EndToEndTests.createPosts(http, owner, count: 2)
        let (post, markPost) = (posts[0], posts[1])

        // A comment notifies the post's owner: in the list, a group and the badge.
        let first = try Self.comment(http, author, post: post, "first!")
        var seen = try await Self.seen(http, owner) { !$0.of("comment", by: authorName).isEmpty }
        #expect(seen.unread == 1 && seen.group("comment:\(post)")?["count"] as? Int == 1)

        // Anyone but its author and the post's owner: 403, and nothing changes.
        let refused = try http.request("DELETE", "/v1/posts/\(post)/comments/\(first)", token: third)
        #expect(refused.status == 403 && refused.object["code"] as? String == "forbidden", "\(refused.text)")
        #expect(refused.header("content-type") == "application/problem+json")
        let listed = try http.request("GET", "/v1/posts/\(post)/comments", token: owner).object["items"] as? [[String: Any]]
        #expect(listed?.compactMap { $0["id"] as? String } == [first])

        // The post's owner deletes it: 204; the count, the list, and after the event the
        // notification, its group and the badge.
        let deleted = try http.request("DELETE", "/v1/posts/\(post)/comments/\(first)", token: owner)
        #expect(deleted.status == 204 && deleted.body.isEmpty, "\(deleted.status) \(deleted.text)")
        let fetched = try http.request("GET", "/v1/posts/\(post)", token: owner).object
        #expect(fetched["commentCount"] as? Int == 0)
        #expect((try http.request("GET", "/v1/posts/\(post)/comments", token: owner).object["items"] as? [Any])?.isEmpty == true)
        seen = try await Self.mark(http, owner, marker: marker, post: markPost)
        #expect(seen.of("comment", by: authorName).isEmpty && seen.group("comment:\(post)") == nil)
        #expect(seen.items.count == 1 && seen.unread == 1, "\(seen.items)")
        try GroupedNotificationTests.expectAgreement(http, owner)

        // Deleting it again, by either: 404.
        for token in [owner, author] {
            let again = try http.request("DELETE", "/v1/posts/\(post)/comments/\(first)", token: token)
            #expect(again.status == 404 && again.object["code"] as? String == "not_found")
        }

        // Commenting again: exactly one notification, of the new comment; its author deletes it.
        let second = try Self.comment(http, author, post: post, "second")
        seen = try await Self.seen(http, owner) { !$0.of("comment", by: authorName).isEmpty }
        let comments = seen.of("comment", by: authorName)
        #expect(comments.count == 1 && comments.first?["text"] as? String == "\(authorName) commented: second")
        #expect(
            seen.group("comment:\(post)")?["count"] as? Int == 1 && Seen.actors(seen.group("comment:\(post)")) == [authorName])
        #expect(seen.unread == 2)
        #expect(try http.request("DELETE", "/v1/posts/\(post)/comments/\(second)", token: author).status == 204)
        seen = try await Self.mark(http, owner, marker: marker, post: markPost)
        #expect(seen.of("comment", by: authorName).isEmpty && seen.group("comment:\(post)") == nil)
        #expect(seen.items.count == 1 && seen.unread == 1, "\(seen.items)")
        try GroupedNotificationTests.expectAgreement(http, owner)
    }

    @Test func theWordListRefusesEachOfTheFiveFieldsNamingIt() async throws {
        let directory = makeTemporaryDirectory("words")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let words = "\(directory)/words.txt"
        try Data("# the operator's list\nbadword\n바보\n".utf8).write(to: URL(fileURLWithPath: words))
        let cluster = try await EndToEndTests.startCluster([WordList.variable: words])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)

        /// Asserts `r` is 422 `objectionable_content` problem details naming `fields`.
        func expectRefused(_ r: HTTPResponse, _ fields: [String], sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(r.status == 422, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
            #expect(r.header("content-type") == "application/problem+json", sourceLocation: sourceLocation)
            #expect(r.object["code"] as? String == "objectionable_content", sourceLocation: sourceLocation)
            #expect(
                r.object["type"] as? String == "https://docs.insta.example/problems/objectionable-content",
                sourceLocation: sourceLocation)
            let errors = r.object["errors"] as? [[String: Any]] ?? []
            #expect(errors.compactMap { $0["field"] as? String } == fields, sourceLocation: sourceLocation)
            #expect(errors.allSatisfy { $0["code"] as? String == "objectionable_content" }, sourceLocation: sourceLocation)
        }
        func register(_ username: String, name: String?) throws -> HTTPResponse {
            var body: [String: Any] = ["email": "\(username)@example.com", "username": username, "password": "correct-horse-9"]
            if let name { body["name"] = name }
            return try http.request("POST", "/v1/auth/register", json: body)
        }

        // Registration: the username (AuthService) and the name (ProfileService), together.
        expectRefused(try register("s\(tag)_badword", name: nil), ["username"])
        expectRefused(try register("s\(tag)u", name: "Mr ＢＡＤＷＯＲＤ"), ["name"])
        expectRefused(try register("badword.s\(tag)", name: "바보"), ["username", "name"])
        // Nothing was made: the names are free.
        let (token, _) = try EndToEndTests.register(http, "s\(tag)u", name: "Fine Name")

        // Edit profile: name, bio and username.
        expectRefused(try http.request("PATCH", "/v1/me/profile", token: token, json: ["name": "BadWord"]), ["name"])
        expectRefused(try http.request("PATCH", "/v1/me/profile", token: token, json: ["bio": "너는 바보"]), ["bio"])
        expectRefused(
            try http.request("PATCH", "/v1/me/profile", token: token, json: ["username": "s\(tag).badword"]), ["username"])
        let me = try http.request("GET", "/v1/me", token: token).object
        #expect(me["name"] as? String == "Fine Name" && me["bio"] as? String == "" && me["username"] as? String == "s\(tag)u")

        // A caption and a comment.
        let image = EndToEndTests.image
        expectRefused(
            try http.request(
                "POST", "/v1/posts", token: token,
                json: ["postType": "photo", "mediaURL": image, "thumbnailURL": image, "caption": "so BADWORD!"]),
            ["caption"])
        let grid = try http.request("GET", "/v1/users/s\(tag)u/posts", token: token).object["items"] as? [Any]
        #expect(grid?.isEmpty == true)
        // Whole words only: a word that contains the term passes.
        let post = try http.request(
            "POST", "/v1/posts", token: token,
            json: ["postType": "photo", "mediaURL": image, "thumbnailURL": image, "caption": "the badwordsmith's 바보짓"])
        #expect(post.status == 201, "\(post.text)")
        let postId = try #require(post.object["id"] as? String)
        expectRefused(
            try http.request("POST", "/v1/posts/\(postId)/comments", token: token, json: ["text": "바보!"]), ["text"])
        let count = try http.request("GET", "/v1/posts/\(postId)", token: token).object["commentCount"] as? Int
        #expect(count == 0)
    }

    @Test func aServiceWhoseWordListCannotBeReadRefusesToStart() async throws {
        let directory = makeTemporaryDirectory("words")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("fine\nf.u\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/unusable.txt"))
        for file in ["\(directory)/missing.txt", "\(directory)/unusable.txt"] {
            for service in ["auth", "profile"] {
                let cluster = Cluster(extraEnvironment: [WordList.variable: file])
                defer { cluster.stopAll() }
                do {
                    _ = try await cluster.start(service)
                    Issue.record("\(service) started with \(file)")
                } catch let error as TestSupportError {
                    #expect(error.description.contains("config.invalid"), "\(error)")
                    #expect(error.description.contains("MODERATION_WORDS_FILE"), "\(error)")
                }
            }
        }
    }
}
