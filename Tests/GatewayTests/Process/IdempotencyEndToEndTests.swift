import Foundation
import Harness
import TestSupport
import Testing
import Wire

/// API.md "Idempotent writes" (`Idempotency-Key`, draft-ietf-httpapi-idempotency-key-header-07)
/// end to end over HTTP against the four real executables: a repeat makes nothing and answers with
/// the first status and body; another request with the key is 422; a malformed key is 400 naming
/// the header; keys are per user; without the header every request is a new write; a write whose
/// reply was lost in a crash is answered from its record after the restart.
@Suite(.serialized)
struct IdempotencyEndToEndTests {
    static let image = "https://images.example.com/p/1.jpg"

    static func post(
        _ http: HTTPClient, _ token: String, key: String?, body: String
    ) throws -> Harness.HTTPResponse {
        var headers = ["Content-Type": "application/json"]
        if let key { headers["Idempotency-Key"] = key }
        return try http.request("POST", "/v1/posts", token: token, raw: Array(body.utf8), headers: headers)
    }

    static func grid(_ http: HTTPClient, _ token: String, _ username: String) throws -> [String] {
        let r = try http.request("GET", "/v1/users/\(username)/posts?limit=100", token: token)
        return (r.object["items"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    static func expectProblem(
        _ r: Harness.HTTPResponse, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            r.status == status && r.object["code"] as? String == code, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
        #expect(r.header("content-type")?.hasPrefix("application/problem+json") == true, sourceLocation: sourceLocation)
        #expect((r.object["detail"] as? String)?.contains("Idempotency-Key") == true, sourceLocation: sourceLocation)
    }

    @Test func postsAndCommentsWithAKeyAreMadeOnce() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (a, b) = ("i\(tag)a", "i\(tag)b")
        let (tokenA, _) = try EndToEndTests.register(http, a)
        let (tokenB, _) = try EndToEndTests.register(http, b)
        let key = UUID().uuidString
        let body = #"{"postType":"photo","mediaURL":"\#(Self.image)","thumbnailURL":"\#(Self.image)","caption":"once"}"#

        // The same key twice: one post, the same status and body.
        let first = try Self.post(http, tokenA, key: key, body: body)
        #expect(first.status == 201, "\(first.text)")
        let postId = first.object["id"] as? String ?? ""
        // Its members in another order, and the absent optional given as null: the same request.
        let reordered =
            #"{"taggedUsernames":null,"caption":"once","thumbnailURL":"\#(Self.image)","mediaURL":"\#(Self.image)","postType":"photo"}"#
        for again in [try Self.post(http, tokenA, key: key, body: body), try Self.post(http, tokenA, key: key, body: reordered)] {
            #expect(again.status == 201 && again.body == first.body, "\(again.status) \(again.text)")
        }
        #expect(try Self.grid(http, tokenA, a) == [postId])

        // The key with another request: 422, nothing made.
        let edited = try Self.post(http, tokenA, key: key, body: body.replacingOccurrences(of: "once", with: "twice"))
        Self.expectProblem(edited, 422, "idempotency_key_reused")
        #expect(try Self.grid(http, tokenA, a) == [postId])

        // Without a key: two posts.
        for _ in 0..<2 { #expect(try Self.post(http, tokenA, key: nil, body: body).status == 201) }
        #expect(try Self.grid(http, tokenA, a).count == 3)

        // Another user's equal key is theirs: a post of their own, answered again for them.
        let theirs = try Self.post(http, tokenB, key: key, body: body)
        #expect(theirs.status == 201 && theirs.object["id"] as? String != postId, "\(theirs.text)")
        #expect(try Self.post(http, tokenB, key: key, body: body).body == theirs.body)
        #expect(try Self.grid(http, tokenB, b).count == 1)
        #expect(try Self.grid(http, tokenA, a).count == 3)

        // A comment with a key: once; the same key and text on another post is another request.
        let commentKey = "\"comment-\(tag)\""  // a Structured Field String: the key is what is quoted
        let comment = try http.request(
            "POST", "/v1/posts/\(postId)/comments", token: tokenB, json: ["text": "nice"],
            headers: ["Idempotency-Key": commentKey])
        #expect(comment.status == 201, "\(comment.text)")
        let bare = try http.request(
            "POST", "/v1/posts/\(postId)/comments", token: tokenB, json: ["text": "nice"],
            headers: ["Idempotency-Key": "comment-\(tag)"])
        #expect(bare.status == 201 && bare.body == comment.body, "\(bare.text)")
        let comments = try http.request("GET", "/v1/posts/\(postId)/comments", token: tokenA)
        #expect((comments.object["items"] as? [[String: Any]])?.count == 1)
        #expect(try http.request("GET", "/v1/posts/\(postId)", token: tokenA).object["commentCount"] as? Int == 1)
        let otherPost = try Self.grid(http, tokenA, a).first { $0 != postId } ?? ""
        let elsewhere = try http.request(
            "POST", "/v1/posts/\(otherPost)/comments", token: tokenB, json: ["text": "nice"],
            headers: ["Idempotency-Key": commentKey])
        Self.expectProblem(elsewhere, 422, "idempotency_key_reused")
    }

    @Test func aMalformedKeyIs400NamingTheHeader() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let name = "k\(RandomID.make().prefix(6))"
        let (token, _) = try EndToEndTests.register(http, name)
        let body = #"{"postType":"photo","mediaURL":"\#(Self.image)","thumbnailURL":"\#(Self.image)"}"#
        let cases: [(String, String)] = [
            ("", "empty"), ("\"\"", "empty"), (String(repeating: "k", count: 256), "too_long"),
            ("caf\u{E9}", "invalid_field"), ("\"unterminated", "invalid_field"), ("\"bad\\escape\"", "invalid_field"),
            ("tab\t", "invalid_field"), (String(repeating: "k", count: 255) + " ", "too_long"),
        ]
        for (key, code) in cases {
            let r = try Self.post(http, token, key: key, body: body)
            Self.expectProblem(r, 400, "invalid_field")
            let errors = r.object["errors"] as? [[String: Any]] ?? []
            #expect(
                errors.first?["field"] as? String == "Idempotency-Key" && errors.first?["code"] as? String == code,
                "\(key): \(r.text)")
        }
        let twice = try http.request(
            "POST", "/v1/posts", token: token, raw: Array(body.utf8),
            headers: ["Content-Type": "application/json", "Idempotency-Key": "a", "idempotency-key": "b"])
        Self.expectProblem(twice, 400, "duplicate_header")
        #expect((twice.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "Idempotency-Key")
        let upload = try http.request(
            "POST", "/v1/media", token: token, raw: [0xFF, 0xD8, 0xFF],
            headers: ["Content-Type": "image/jpeg", "Idempotency-Key": ""])
        Self.expectProblem(upload, 400, "invalid_field")
        #expect(try Self.grid(http, token, name).isEmpty)
        // The longest key is fine; spaces around a key are not part of it (RFC 9110 §5.5).
        let longest = try Self.post(http, token, key: String(repeating: "k", count: 255), body: body)
        #expect(longest.status == 201)
        let spaced = try Self.post(http, token, key: " " + String(repeating: "k", count: 253) + " ", body: body)
        #expect(spaced.status == 201)
        #expect(try Self.post(http, token, key: String(repeating: "k", count: 253), body: body).body == spaced.body)
        #expect(try Self.grid(http, token, name).count == 2)
    }

    @Test func anUploadWithAKeyIsStoredOnce() async throws {
        let cluster = try await EndToEndTests.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let (token, _) = try EndToEndTests.register(http, "u\(RandomID.make().prefix(6))")
        let jpeg = try MediaFiles.jpeg(width: 320, height: 240)
        func upload(_ bytes: [UInt8], _ type: String, key: String?) throws -> Harness.HTTPResponse {
            var headers = ["Content-Type": type]
            if let key { headers["Idempotency-Key"] = key }
            return try http.request("POST", "/v1/media", token: token, raw: bytes, headers: headers, timeoutSeconds: 120)
        }
        let first = try upload(jpeg, "image/jpeg", key: "upload-1")
        #expect(first.status == 201, "\(first.text)")
        let again = try upload(jpeg, "image/jpeg", key: "upload-1")
        #expect(again.status == 201 && again.body == first.body)
        Self.expectProblem(
            try upload(try MediaFiles.png(width: 320, height: 240), "image/png", key: "upload-1"), 422, "idempotency_key_reused")
        #expect(try upload(jpeg, "image/jpeg", key: nil).status == 201)
    }

    /// ProfileService killed after committing a keyed post and before replying (the test hook
    /// `PROFILE_TEST_CRASH_AFTER_KEYED_WRITE_FILE`): the client gets 503 or 504; after the restart
    /// the same request with the same key gets the post that was made, and no second one.
    @Test func aWriteWhoseReplyWasLostIsAnsweredFromItsRecord() async throws {
        let directory = makeTemporaryDirectory("idempotency-crash")
        let flag = "\(directory)/crash-after-keyed-write"
        let cluster = Cluster(
            dataDirectory: directory, extraEnvironment: ["PROFILE_TEST_CRASH_AFTER_KEYED_WRITE_FILE": flag])
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let name = "c\(RandomID.make().prefix(6))"
        let (token, _) = try EndToEndTests.register(http, name)
        let body = #"{"postType":"photo","mediaURL":"\#(Self.image)","thumbnailURL":"\#(Self.image)","caption":"lost"}"#
        #expect(FileManager.default.createFile(atPath: flag, contents: Data()))
        let cut = try Self.post(http, token, key: "crash-1", body: body)
        #expect(cut.status == 503 || cut.status == 504, "\(cut.status) \(cut.text)")
        #expect(!cluster.processes["profile"]!.isRunning)
        _ = cluster.stop("profile")
        try await cluster.start("profile")
        var ready = 0
        for _ in 0..<100 where ready != 200 { ready = try http.request("GET", "/readyz").status }
        #expect(ready == 200)
        let retry = try Self.post(http, token, key: "crash-1", body: body)
        #expect(retry.status == 201 && retry.object["caption"] as? String == "lost", "\(retry.status) \(retry.text)")
        #expect(try Self.grid(http, token, name) == [retry.object["id"] as? String ?? "?"])
        #expect(try Self.post(http, token, key: "crash-1", body: body).body == retry.body)
    }

    /// Two ProfileService replicas (PostgreSQL): the one that takes a keyed post is killed after
    /// its commit and before its reply. The gateway sends the call again (marked idempotent) to
    /// the other replica, which answers from the record: the client gets 201 and one post.
    @Test(.enabled(if: TestStorage.engine == .postgres, "replicas need PostgreSQL"))
    func aReplicaKilledBetweenCommitAndReplyIsCoveredByTheOther() async throws {
        let directory = makeTemporaryDirectory("idempotency-replicas")
        let flag = "\(directory)/crash-after-keyed-write"
        let cluster = Cluster(
            dataDirectory: directory, extraEnvironment: ["PROFILE_TEST_CRASH_AFTER_KEYED_WRITE_FILE": flag])
        defer { cluster.stopAll() }
        try cluster.reserve(["auth", "profile", "notification"].flatMap { [$0, "\($0).2"] })
        for service in ["auth", "profile", "notification"] {
            try await cluster.start(service)
            try await cluster.start("\(service).2")
        }
        try await cluster.start("gateway")
        let http = HTTPClient(port: cluster.gatewayPort)
        let name = "r\(RandomID.make().prefix(6))"
        let (token, _) = try EndToEndTests.register(http, name)
        let body = #"{"postType":"photo","mediaURL":"\#(Self.image)","thumbnailURL":"\#(Self.image)","caption":"kept"}"#
        #expect(FileManager.default.createFile(atPath: flag, contents: Data()))
        let created = try Self.post(http, token, key: "replica-1", body: body)
        #expect(created.status == 201 && created.object["caption"] as? String == "kept", "\(created.status) \(created.text)")
        let running = ["profile", "profile.2"].filter { cluster.processes[$0]?.isRunning == true }
        #expect(running.count == 1, "running: \(running)")
        #expect(try Self.grid(http, token, name) == [created.object["id"] as? String ?? "?"])
        #expect(try Self.post(http, token, key: "replica-1", body: body).body == created.body)
    }
}
