import Foundation
import Harness
import Messages
import Support
import Testing
import Wire

/// Reports and moderation (API.md "Account lifecycle and moderation"; issue 40) through the four
/// real executables, on either engine: the operator's `AuthService moderator grant|revoke` on
/// AuthService's own configuration, reports with their snapshots, what a hostile client tries
/// (a non-moderator on every moderation route, a report on a deleted target, two moderators
/// resolving at once, a duplicate while open, the hourly limit), removal through the owner's
/// path, the reporter's `report_resolved` notification, a suspension (login 403
/// `account_suspended`, the account's content 404 to others) and its lifting, the queue on
/// /metrics; and the moderation console in a real browser (headless Chromium driven through its
/// DevTools protocol by scripts/console-browser-test.py; skipped, saying so, without Chromium),
/// where a caption made to run script stays text.
@Suite(.serialized)
struct ModerationEndToEndTests {
    /// A registered user: session token, id and username.
    struct User {
        var token: String
        var id: String
        var name: String
    }

    let cluster: Cluster
    let http: HTTPClient
    let tag = RandomID.make().prefix(6)
    static let password = "correct-horse-9"

    init() async throws {
        // A small hourly limit, so the 429 is reached in a few reports.
        cluster = try await EndToEndTests.startCluster(["PROFILE_REPORTS_PER_HOUR": "4"])
        http = HTTPClient(port: cluster.gatewayPort)
    }

    func user(_ suffix: String) throws -> User {
        let (token, object) = try EndToEndTests.register(http, "m\(tag)\(suffix)")
        return User(token: token, id: object["id"] as? String ?? "", name: object["username"] as? String ?? "")
    }

    /// Makes `user` a moderator with the operator's command, and logs them in again (the role
    /// holds from the next login).
    func moderator(_ user: User) throws -> User {
        let granted = try cluster.command("auth", ["moderator", "grant", user.name])
        #expect(granted.status == 0 && granted.output.contains("granted \(user.name)"), "\(granted.output)")
        let login = try http.request("POST", "/v1/auth/login", json: ["login": user.name, "password": Self.password])
        #expect(login.status == 200)
        return User(token: login.object["token"] as? String ?? "", id: user.id, name: user.name)
    }

    func login(_ user: User) throws -> HTTPResponse {
        try http.request("POST", "/v1/auth/login", json: ["login": user.name, "password": Self.password])
    }

    @discardableResult
    func call(_ method: String, _ path: String, _ user: User, _ json: [String: Any]? = nil) throws -> HTTPResponse {
        try http.request(method, path, token: user.token, json: json ?? (["PUT", "PATCH", "POST"].contains(method) ? [:] : nil))
    }

    func report(_ user: User, _ type: String, _ id: String, reason: String = "spam", comment: String? = nil) throws
        -> HTTPResponse
    {
        var body: [String: Any] = ["target": ["type": type, "id": id], "reason": reason]
        if let comment { body["comment"] = comment }
        return try call("POST", "/v1/reports", user, body)
    }

    func resolve(_ user: User, _ report: String, _ action: String, client: HTTPClient? = nil) throws -> HTTPResponse {
        try (client ?? http).request(
            "POST", "/v1/moderation/reports/\(report)/resolve", token: user.token, json: ["action": action])
    }

    /// `user`'s notifications: (type, text, actor's username).
    func notifications(_ user: User) throws -> [(type: String, text: String, actor: String)] {
        try GroupedNotificationTests.flat(http, user.token).map {
            (
                $0["type"] as? String ?? "", $0["text"] as? String ?? "",
                ($0["actor"] as? [String: Any])?["username"] as? String ?? ""
            )
        }
    }

    @Test func reportsModerationAndWhatAHostileClientTries() async throws {
        defer { cluster.stopAll() }
        let (alice, bob, carol, dave) = (try user("a"), try user("b"), try user("c"), try user("d"))
        let (mod1, mod2) = (try moderator(try user("m1")), try moderator(try user("m2")))
        let posts = try EndToEndTests.createPosts(http, alice.token, count: 3)
        #expect(try call("PUT", "/v1/posts/\(posts[0])/like", carol).status == 200)

        // A report keeps its snapshot; a duplicate while open answers it (200).
        let first = try report(bob, "post", posts[0], reason: "hate", comment: "look at this")
        #expect(first.status == 201 && first.object["status"] as? String == "open", "\(first.text)")
        let reportId = first.object["id"] as? String ?? ""
        let target = first.object["target"] as? [String: Any] ?? [:]
        let snapshot = target["snapshot"] as? [String: Any] ?? [:]
        #expect(target["type"] as? String == "post" && snapshot["username"] as? String == alice.name)
        #expect(snapshot["mediaURL"] as? String == "https://images.example.com/p/1.jpg" && snapshot.keys.contains("bio"))
        let duplicate = try report(bob, "post", posts[0])
        #expect(duplicate.status == 200 && duplicate.object["id"] as? String == reportId)
        let second = try report(carol, "post", posts[0], reason: "spam")
        #expect(second.status == 201 && second.object["reportsOnTarget"] as? Int == 2)
        // Oneself, one's own content, an unknown target, a deleted one.
        let own = try report(alice, "post", posts[0])
        #expect(own.status == 422 && own.object["code"] as? String == "cannot_report_self")
        #expect(try report(bob, "user", bob.id).object["code"] as? String == "cannot_report_self")
        #expect(try report(bob, "post", "nope\(tag)").status == 404)
        #expect(try call("DELETE", "/v1/posts/\(posts[2])", alice).status == 204)
        #expect(try report(bob, "post", posts[2]).status == 404)
        let bad = try report(bob, "story", posts[0], reason: "boring")
        #expect(
            bad.status == 400
                && Set((bad.object["errors"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }) == [
                    "target.type", "reason",
                ])

        // A non-moderator on every moderation route: 403, and nothing changes.
        for (method, path, json) in [
            ("GET", "/v1/moderation/reports", nil), ("GET", "/v1/moderation/reports?status=resolved", nil),
            ("POST", "/v1/moderation/reports/\(reportId)/resolve", ["action": "remove_content"]),
            ("PUT", "/v1/moderation/users/\(alice.name)/suspension", nil),
            ("DELETE", "/v1/moderation/users/\(alice.name)/suspension", nil),
        ] as [(String, String, [String: Any]?)] {
            let answer = try call(method, path, bob, json)
            #expect(answer.status == 403 && answer.object["code"] as? String == "forbidden", "\(method) \(path): \(answer.text)")
        }
        #expect(try call("GET", "/v1/posts/\(posts[0])", bob).status == 200)

        // A moderator sees the open reports, oldest first, with the snapshot and the count.
        let queue = try call("GET", "/v1/moderation/reports", mod1).object["items"] as? [[String: Any]] ?? []
        let mine = queue.filter { (($0["target"] as? [String: Any])?["id"] as? String) == posts[0] }
        #expect(mine.map { $0["id"] as? String } == [reportId, second.object["id"] as? String])
        #expect(mine.first?["comment"] as? String == "look at this" && mine.first?["reportsOnTarget"] as? Int == 2)
        #expect((mine.first?["reporter"] as? [String: Any])?["username"] as? String == bob.name)
        let metrics = try http.request("GET", "/metrics").text
        #expect(
            metrics.contains("\nmoderation_open_reports ") && metrics.contains("\nmoderation_oldest_open_report_age_seconds "))

        // Two moderators at once on the two reports of one target: one resolution, both see it.
        let (resolvedA, resolvedB) = try await withThrowingTaskGroup(of: (Int, HTTPResponse).self) { group in
            group.addTask { (0, try resolve(mod1, reportId, "remove_content", client: HTTPClient(port: cluster.gatewayPort))) }
            group.addTask {
                (
                    1,
                    try resolve(
                        mod2, second.object["id"] as? String ?? "", "dismiss", client: HTTPClient(port: cluster.gatewayPort))
                )
            }
            var answers: [Int: HTTPResponse] = [:]
            for try await (i, answer) in group { answers[i] = answer }
            return (answers[0]!, answers[1]!)
        }
        #expect(resolvedA.status == 200 && resolvedB.status == 200, "\(resolvedA.text) \(resolvedB.text)")
        let actions = [resolvedA, resolvedB].map { ($0.object["resolution"] as? [String: Any])?["action"] as? String }
        #expect(actions[0] == actions[1] && resolvedA.object["status"] as? String == "resolved", "\(actions)")
        let won = actions[0] ?? ""
        // Again later (a second console): the same resolution, nothing more done.
        let late = try resolve(mod2, reportId, won == "dismiss" ? "remove_content" : "dismiss")
        #expect(((late.object["resolution"] as? [String: Any])?["action"] as? String) == won)
        #expect(try call("GET", "/v1/posts/\(posts[0])", bob).status == (won == "remove_content" ? 404 : 200))
        // Both reporters are told, by a notification that names nobody but themselves.
        let expected = won == "remove_content" ? "We removed the post you reported." : "We reviewed your report."
        for reporter in [bob, carol] {
            try await eventually("\(reporter.name) is told") {
                try notifications(reporter).contains { $0.type == "report_resolved" }
            }
            let told = try notifications(reporter).filter { $0.type == "report_resolved" }
            #expect(told.map(\.text) == [expected] && told.map(\.actor) == [reporter.name])
            #expect(told.allSatisfy { !$0.text.contains(mod1.name) && !$0.text.contains(mod2.name) })
        }

        // Removing content goes through the owner's path: the post, its like's notification.
        let other = try report(dave, "post", posts[1]).object["id"] as? String ?? ""
        #expect(try call("PUT", "/v1/posts/\(posts[1])/like", carol).status == 200)
        try await eventually("carol's like notified alice") {
            try notifications(alice).filter { $0.type == "like" }.count == (won == "remove_content" ? 1 : 2)
        }
        let removed = try resolve(mod1, other, "remove_content")
        #expect(((removed.object["resolution"] as? [String: Any])?["action"] as? String) == "remove_content")
        try await eventually("the post is gone") { try call("GET", "/v1/posts/\(posts[1])", bob).status == 404 }
        try await eventually("its notifications went with it") {
            try notifications(alice).filter { $0.type == "like" }.count == (won == "remove_content" ? 0 : 1)
        }
        try await eventually("dave is told") {
            try notifications(dave).map(\.text) == ["We removed the post you reported."]
        }
        // The snapshot stays in the resolved list.
        let resolved = try call("GET", "/v1/moderation/reports?status=resolved", mod1).object["items"] as? [[String: Any]] ?? []
        #expect(resolved.contains { ($0["id"] as? String) == other })

        // suspend_user on an account: resolved and told at once; the suspension itself is
        // AuthService's (auth.set_suspension), retried from ProfileService's queue until taken.
        let davePost = try EndToEndTests.createPosts(http, dave.token, count: 1)[0]
        #expect(try call("GET", "/v1/posts/\(davePost)", bob).status == 200)
        let onAccount = try report(bob, "user", dave.id, reason: "harassment").object["id"] as? String ?? ""
        #expect(try resolve(mod1, onAccount, "remove_content").object["code"] as? String == "action_not_applicable")
        #expect(try resolve(mod1, onAccount, "suspend_user").object["status"] as? String == "resolved")
        try await eventually("bob is told about the account") {
            try notifications(bob).contains { $0.text == "We took action on the account you reported." }
        }
        // Suspended: dave's session ends, the right password is 403 account_suspended, and his
        // header and posts are 404 to others.
        try await eventually("dave's login is refused") {
            try login(dave).object["code"] as? String == "account_suspended"
        }
        #expect(try login(dave).status == 403)
        #expect(try call("GET", "/v1/me", dave).status == 401)
        try await eventually("dave's content is hidden") {
            try call("GET", "/v1/posts/\(davePost)", bob).status == 404
                && call("GET", "/v1/users/\(dave.name)", bob).status == 404
        }
        // Lifting it (a moderator only) restores all of it.
        #expect(try call("DELETE", "/v1/moderation/users/\(dave.name)/suspension", bob).status == 403)
        let lifted = try call("DELETE", "/v1/moderation/users/\(dave.name)/suspension", mod1)
        #expect(lifted.status == 204, "\(lifted.text)")
        try await eventually("dave can log in again") { try login(dave).status == 200 }
        try await eventually("dave's content is back") {
            try call("GET", "/v1/posts/\(davePost)", bob).status == 200
                && call("GET", "/v1/users/\(dave.name)", bob).status == 200
        }
        // And a moderator suspends directly, without a report.
        #expect(try call("PUT", "/v1/moderation/users/\(dave.name)/suspension", mod1).status == 204)
        try await eventually("dave's login is refused again") { try login(dave).status == 403 }
        #expect(try call("DELETE", "/v1/moderation/users/\(dave.name)/suspension", mod1).status == 204)
        try await eventually("and allowed again") { try login(dave).status == 200 }

        // The hourly limit (4 here): 429 with Retry-After; an open report still answers. Bob has
        // filed two (the post, dave's account); the duplicate and the refused ones did not count.
        #expect(try report(bob, "user", carol.id).status == 201)
        #expect(try report(bob, "user", alice.id).status == 201)
        let limited = try report(bob, "user", mod1.id)
        #expect(limited.status == 429 && limited.object["code"] as? String == "too_many_reports", "\(limited.text)")
        #expect(Int(limited.header("retry-after") ?? "") ?? 0 > 0)
        #expect(try report(bob, "user", carol.id).status == 200)

        // The operator revokes: the next moderation request is 403.
        let revoked = try cluster.command("auth", ["moderator", "revoke", mod2.name])
        #expect(revoked.status == 0, "\(revoked.output)")
        #expect(try call("GET", "/v1/moderation/reports", mod2).status == 403)
        #expect(try call("GET", "/v1/moderation/reports", mod1).status == 200)
        #expect(try cluster.command("auth", ["moderator", "grant", "nobody\(tag)"]).status == 1)
    }

    @Test func theConsoleInARealBrowserKeepsAScriptCaptionAsText() async throws {
        defer { cluster.stopAll() }
        let (alice, bob) = (try user("a"), try user("b"))
        let mod = try moderator(try user("m"))
        let caption = "<img src=x onerror=alert(1)>"
        let comment = "<script>alert(2)</script> & \"quotes\""
        let created = try http.request(
            "POST", "/v1/posts", token: alice.token,
            json: [
                "postType": "photo", "mediaURL": "https://images.example.com/p/1.jpg",
                "thumbnailURL": "https://images.example.com/p/1.jpg", "caption": caption,
            ])
        let post = try #require(created.object["id"] as? String)
        let filed = try report(bob, "post", post, reason: "violence", comment: comment)
        #expect(filed.status == 201)
        // The screenshots are kept as the test's artefacts under the package's reports/ (ignored by git).
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let directory = root.appendingPathComponent("reports/moderation-console").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let screenshot = "\(directory)/console.png"
        let script = root.appendingPathComponent("scripts/console-browser-test.py").path
        let python = ProcessInfo.processInfo.environment["CONSOLE_TEST_PYTHON"] ?? "/usr/bin/python3"
        let run = try ChildProcess(
            python,
            [
                script, "--url", "http://127.0.0.1:\(cluster.gatewayPort)", "--login", mod.name, "--password", Self.password,
                "--post", post, "--caption", caption, "--comment", comment, "--action", "remove_content",
                "--screenshot", screenshot, "--after-screenshot", "\(directory)/console-resolved.png",
            ], stdout: .pipe, stderr: .pipe)
        let output = String(decoding: run.readToEnd(run.standardOutput), as: UTF8.self)
        let errors = String(decoding: run.readToEnd(run.standardError), as: UTF8.self)
        let termination = run.waitUntilExit()
        if termination == .exited(3) {
            // No Chromium on this machine: the script says so, and there is nothing to check.
            print("moderation console in a browser: \(errors)")
            return
        }
        #expect(termination == .exited(0), "console-browser-test: \(errors) (needs chromium: scripts/install-deps)")
        let result = (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:]
        #expect(result["ok"] as? Bool == true && result["shownCaption"] as? String == caption, "\(output)")
        #expect(result["reportId"] as? String == filed.object["id"] as? String)
        #expect(FileManager.default.fileExists(atPath: screenshot))
        print("moderation console screenshot: \(screenshot) (after resolving: \(directory)/console-resolved.png)")
        // What the page did, as the API sees it: resolved, the post removed, bob told.
        try await eventually("the post is gone") { try call("GET", "/v1/posts/\(post)", bob).status == 404 }
        let open = try call("GET", "/v1/moderation/reports", mod).object["items"] as? [[String: Any]] ?? []
        #expect(!open.contains { ($0["id"] as? String) == result["reportId"] as? String })
        try await eventually("bob is told") {
            try notifications(bob).map(\.text) == ["We removed the post you reported."]
        }
    }
}
