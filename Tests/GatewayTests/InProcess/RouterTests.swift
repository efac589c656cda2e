import Harness
import Testing

@testable import Gateway

/// Routing segment by segment on the raw path, then percent-decoding each segment.
@Suite struct RouterTests {
    let router: Router = {
        var routes = RouteCollection()
        for (method, template): (HTTPMethod, String) in [
            (.get, "/v1/users/{username}"), (.get, "/v1/users/{username}/followers"), (.put, "/v1/users/{username}/follow"),
            (.delete, "/v1/users/{username}/follow"), (.get, "/v1/me"), (.get, "/v1/me/profile/edit"),
        ] {
            routes.add(method, template) { _ in HTTPResponse(status: 204) }
        }
        return Router(routes.routes)
    }()

    func parameter(_ path: String, _ method: HTTPMethod = .get) -> String? {
        if case .found(_, let params) = router.match(method: method, rawPath: path) { return params["username"] }
        return nil
    }

    @Test func segmentsAreDecodedAfterSplitting() {
        #expect(parameter("/v1/users/alice") == "alice")
        #expect(parameter("/v1/users/al%69ce") == "alice")
        #expect(parameter("/v1/users/a+b") == "a+b")  // `+` is a space only in queries
        #expect(parameter("/v1/users/a%20b") == "a b")
        #expect(parameter("/v1/users/alice/") == "alice")
        #expect(parameter("/v1/%75sers/alice") == "alice")
    }

    @Test func anEscapedSlashOrNulOrABadEscapeIsRefusedNotRouted() {
        for path in [
            "/v1/users/al%2Fice", "/v1/users/al%2fice/followers", "/v1/users/al%00ice", "/v1/users/al%zzice",
            "/v1/users/al%4", "/v1/users/%C3%28", "/v1/users/x%2F..%2Fme",
        ] {
            guard case .malformed = router.match(method: .get, rawPath: path) else {
                Issue.record("\(path) was not refused")
                continue
            }
        }
        // Without decoding first, `me%2Fprofile%2Fedit` must not reach /v1/me/profile/edit.
        if case .found(let route, _) = router.match(method: .get, rawPath: "/v1/me%2Fprofile%2Fedit") {
            Issue.record("routed to \(route.template)")
        }
    }

    @Test func otherMethodsOfAPathAreNamedForAllow() {
        guard case .methodNotAllowed(let allowed) = router.match(method: .post, rawPath: "/v1/users/alice/follow") else {
            Issue.record("not a 405")
            return
        }
        #expect(allowed == [.delete, .put])
        guard case .methodNotAllowed(let getAllowed) = router.match(method: .post, rawPath: "/v1/me") else {
            Issue.record("not a 405")
            return
        }
        #expect(getAllowed == [.get, .head])
        if case .found = router.match(method: .head, rawPath: "/v1/me") {} else { Issue.record("HEAD is not served by GET") }
    }

    @Test func queriesDecodePlusAsSpaceAndRefuseBadEscapes() throws {
        let q = try Query("limit=5&cursor=a%2Bb+c&empty=&flag")
        #expect(q["limit"] == "5" && q["cursor"] == "a+b c" && q["empty"] == "" && q["flag"] == "")
        #expect(throws: Problem.self) { _ = try Query("cursor=%zz") }
    }
}

/// The metrics cannot be shaped by clients.
@Suite struct MetricsTests {
    @Test func labelValuesComeFromAClosedSetAndAreEscaped() {
        let metrics = Metrics(gauges: { Metrics.Gauges() })
        metrics.recordRequest(route: "unmatched", method: HTTPMethod("PROPFIND"), status: 404, seconds: 0)
        metrics.recordRequest(route: "/v1/users/{username}", method: .get, status: 200, seconds: 0.01)
        let text = metrics.render()
        #expect(text.contains(#"http_requests_total{route="unmatched",method="other",status="404"} 1"#))
        #expect(!text.contains("PROPFIND"))
        #expect(Metrics.escape("a\"b\\c\nd") == #"a\"b\\c\nd"#)
    }
}
