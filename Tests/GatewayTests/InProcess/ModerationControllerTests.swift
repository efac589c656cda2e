import Messages
import Testing
import Wire

@testable import Gateway

/// Reports, the moderation routes and the console in process (API.md "Account lifecycle and
/// moderation"): 201 for a new report and 200 for the open one; the role asked of AuthService on
/// every moderation request, before anything else, so anyone else gets 403 and ProfileService
/// hears nothing; the console's headers and the script's rule (text, never markup); the queue's
/// gauges on /metrics.
@Suite struct ModerationControllerTests {
    let gateway = InProcessGateway()

    static func report(_ id: String, status: String = "open") -> Profile.Report {
        Profile.Report(
            id: id,
            target: .init(
                type: "post", id: "p1",
                snapshot: .init(ownerId: "u-alice", username: "alice", postId: "p1", caption: "<img src=x onerror=alert(1)>")),
            reason: "spam", comment: nil, reporter: Fixtures.user("bob"), reportsOnTarget: 1, status: status,
            resolution: status == "open" ? nil : .init(action: "dismiss", note: nil, at: "2026-01-01T00:00:00.000Z"),
            createdAt: "2026-01-01T00:00:00.000Z")
    }

    @Test func aReportIs201AndTheOpenOneAgainIs200() async {
        let token = gateway.signIn("bob")
        gateway.profile.on(Profile.CreateReport.self) { request, _ in
            .init(report: Self.report("r1"), created: request.reason == "spam")
        }
        let body = #"{"target": {"type": "post", "id": "p1"}, "reason": "spam", "comment": "look"}"#
        let created = await gateway.request(.post, "/v1/reports", token: token, json: body)
        #expect(created.status == 201 && created["id"] == .string("r1") && created["comment"] == .null)
        let sent = gateway.profile.requests(Profile.CreateReport.self).first
        #expect(sent?.reporterId == "u-bob" && sent?.targetType == "post" && sent?.targetId == "p1" && sent?.comment == "look")
        let again = await gateway.request(
            .post, "/v1/reports", token: token, json: #"{"target": {"type": "post", "id": "p1"}, "reason": "hate"}"#)
        #expect(again.status == 200)
        // The JSON's shape is the gateway's to check; the values are ProfileService's.
        let extra = await gateway.request(
            .post, "/v1/reports", token: token, json: #"{"target": {"type": "post", "id": "p1", "x": 1}, "reason": "spam"}"#)
        #expect(extra.code == "unknown_field" && extra.fields == ["target.x"])
        let missing = await gateway.request(.post, "/v1/reports", token: token, json: #"{"reason": "spam"}"#)
        #expect(missing.fields == ["target"] && missing.fieldCodes == ["required"])
        #expect(await gateway.request(.post, "/v1/reports", json: body).status == 401)
    }

    @Test func anyoneButAModeratorIs403OnEveryModerationRouteAndProfileServiceHearsNothing() async {
        let token = gateway.signIn("bob")
        for (method, path, json) in [
            (HTTPMethod.get, "/v1/moderation/reports", nil), (.get, "/v1/moderation/reports?status=resolved", nil),
            (.get, "/v1/moderation/reports?status=bogus&limit=0", nil),
            (.post, "/v1/moderation/reports/r1/resolve", #"{"action": "dismiss"}"#),
            (.post, "/v1/moderation/reports/r1/resolve", #"{"bogus": 1}"#),
            (.put, "/v1/moderation/users/alice/suspension", nil), (.delete, "/v1/moderation/users/alice/suspension", nil),
        ] as [(HTTPMethod, String, String?)] {
            let answer = await gateway.request(method, path, token: token, json: json)
            #expect(answer.status == 403 && answer.code == "forbidden", "\(method) \(path): \(answer.text)")
            #expect(await gateway.request(method, path, json: json).status == 401, "\(method) \(path)")
        }
        #expect(gateway.profile.calls.isEmpty)
    }

    @Test func aModeratorListsResolvesAndSuspends() async {
        let token = gateway.signIn("mod", moderator: true)
        gateway.profile.on(Profile.ListReports.self) { request, _ in
            .init(items: [Self.report("r1", status: request.status)], nextCursor: nil)
        }
        gateway.profile.on(Profile.ResolveReport.self) { request, _ in Self.report(request.reportId, status: "resolved") }
        gateway.profile.on(Profile.SetSuspension.self) { request, _ in
            .init(state: request.suspended ? .suspended : .active, version: 3)
        }
        let open = await gateway.request(.get, "/v1/moderation/reports?limit=5", token: token)
        #expect(open.status == 200)
        let listed = gateway.profile.requests(Profile.ListReports.self).last
        #expect(listed?.status == "open" && listed?.moderatorId == "u-mod" && listed?.page.limit == 5)
        _ = await gateway.request(.get, "/v1/moderation/reports?status=resolved", token: token)
        #expect(gateway.profile.requests(Profile.ListReports.self).last?.status == "resolved")
        let badStatus = await gateway.request(.get, "/v1/moderation/reports?status=all", token: token)
        #expect(badStatus.status == 400 && badStatus.fields == ["status"])
        let resolved = await gateway.request(
            .post, "/v1/moderation/reports/r9/resolve", token: token, json: #"{"action": "remove_content", "note": "n"}"#)
        #expect(resolved.status == 200 && resolved["status"] == .string("resolved") && resolved["id"] == .string("r9"))
        let sent = gateway.profile.requests(Profile.ResolveReport.self).last
        #expect(sent?.moderatorId == "u-mod" && sent?.action == "remove_content" && sent?.note == "n")
        #expect(await gateway.request(.put, "/v1/moderation/users/alice/suspension", token: token).status == 204)
        #expect(await gateway.request(.delete, "/v1/moderation/users/alice/suspension", token: token).status == 204)
        let suspensions = gateway.profile.requests(Profile.SetSuspension.self)
        #expect(suspensions.map(\.suspended) == [true, false] && suspensions.allSatisfy { $0.username == "alice" })
        // The role is asked of AuthService every time, not taken from the token cache.
        let validations = gateway.auth.requests(Auth.Validate.self).count
        _ = await gateway.request(.get, "/v1/moderation/reports", token: token)
        #expect(gateway.auth.requests(Auth.Validate.self).count == validations + 1)
    }

    @Test func theConsoleIsItsOwnPageUnderAStrictPolicy() async {
        for (path, type) in [
            ("/moderation", "text/html"), ("/moderation/console.js", "text/javascript"),
            ("/moderation/console.css", "text/css"),
        ] {
            let page = await gateway.request(.get, path)
            #expect(page.status == 200 && page.header("content-type")?.hasPrefix(type) == true, "\(path)")
            #expect(page.header("content-security-policy")?.hasPrefix("default-src 'self'") == true, "\(path)")
            #expect(page.header("x-content-type-options") == "nosniff")
        }
        let html = await gateway.request(.get, "/moderation").text
        #expect(html.contains(#"<script src="/moderation/console.js" defer></script>"#))
        #expect(!html.contains("<script>") && !html.contains("style=") && !html.contains("http"))
        // The script writes user text as text, keeps the token in a variable, and stores nothing.
        let script = ModerationConsole.script
        for banned in [
            "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "localStorage", "sessionStorage",
            "document.cookie", "eval(", "new Function",
        ] {
            #expect(!script.contains(banned), "\(banned)")
        }
        #expect(script.contains("textContent") && script.contains(#""/v1/auth/login""#))
    }

    @Test func metricsCarryTheOpenReportsAndTheOldestAge() async {
        gateway.profile.on(Profile.ReportStats.self) { _, _ in .init(open: 3, oldestOpenAgeSeconds: 7_200.5) }
        let text = await gateway.request(.get, "/metrics").text
        #expect(text.contains("# TYPE moderation_open_reports gauge\nmoderation_open_reports 3\n"))
        #expect(text.contains("# TYPE moderation_oldest_open_report_age_seconds gauge\n"))
        #expect(text.contains("moderation_oldest_open_report_age_seconds 7200.5\n"))
    }
}
