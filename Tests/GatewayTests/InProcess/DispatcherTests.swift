import BackendKit
import Messages
import Support
import Testing
import Wire

@testable import Gateway

/// What every route gets from the dispatcher, in process on fake services: routing (404, 405,
/// `OPTIONS *`), the caller's session, the body checked against the route before the handler,
/// service errors as problem details, and the metrics.
@Suite struct DispatcherTests {
    let gateway = InProcessGateway()

    @Test func anUnknownPathIs404AndAKnownPathWithAnotherMethodIs405WithAllow() async {
        let missing = await gateway.request(.get, "/v1/nothing")
        #expect(missing.status == 404)
        #expect(
            missing.text
                == #"{"code":"not_found","detail":"no route for GET `/v1/nothing`","status":404,"title":"Not Found","type":"https://docs.insta.example/problems/not-found"}"#
        )
        let wrong = await gateway.request(.post, "/v1/me")
        #expect(wrong.status == 405 && wrong.header("Allow") == "DELETE, GET, HEAD" && wrong.code == "method_not_allowed")
        #expect(wrong["detail"] == .string("POST is not allowed here; use DELETE, GET, HEAD"))
        let escaped = await gateway.request(.get, "/v1/users/a%2Fb")
        #expect(escaped.status == 400 && escaped.code == "invalid_path")
    }

    @Test func optionsStarNamesEveryMethodARouteServes() async {
        let r = await gateway.request(.options, "*")
        #expect(r.status == 200 && r.bytes.isEmpty)
        #expect(r.header("Allow") == "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT")
    }

    @Test func anAuthenticatedRouteNeedsAValidBearerToken() async {
        let none = await gateway.request(.get, "/v1/me")
        #expect(none.status == 401 && none.code == "unauthorized" && none.header("WWW-Authenticate") == "Bearer")
        let unknown = await gateway.request(.get, "/v1/me", token: "made-up")
        #expect(unknown.status == 401 && unknown.code == "invalid_token")
        #expect(gateway.profile.count(Profile.GetMe.self) == 0)
    }

    @Test func aBodyMustSayItIsJSONAndBeOneObject() async {
        let token = gateway.signIn("alice")
        let plain = await gateway.request(
            .post, "/v1/posts/p1/comments", token: token, json: #"{"text":"hi"}"#, headers: [("content-type", "text/plain")])
        #expect(plain.status == 415 && plain.header("Accept-Post") == "application/json")
        #expect(plain["detail"] == .string("the body must be application/json, not `text/plain`"))
        let patch = await gateway.request(
            .patch, "/v1/settings", token: token, json: "{}", headers: [("content-type", "text/plain")])
        #expect(patch.status == 415 && patch.header("Accept-Patch") == "application/json")
        let broken = await gateway.request(.post, "/v1/posts/p1/comments", token: token, json: #"{"text": }"#)
        #expect(broken.status == 400 && broken.code == "malformed_json")
        #expect(broken["detail"] == .string("the body is not valid JSON: unexpected character at byte 9"))
        let array = await gateway.request(.post, "/v1/posts/p1/comments", token: token, json: "[]")
        #expect(array["detail"] == .string("the body must be a JSON object"))
        #expect(gateway.profile.calls.isEmpty)
    }

    @Test func aRouteThatTakesNoBodyRefusesEveryMember() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.DeletePost.self) { _, _ in Empty() }
        let refused = await gateway.request(.delete, "/v1/posts/p1", token: token, json: #"{"force":true}"#)
        #expect(
            refused.text
                == #"{"code":"unknown_field","detail":"unknown field `force`","errors":[{"code":"unknown_field","field":"force","message":"is not a field of this request"}],"status":400,"title":"Bad Request","type":"https://docs.insta.example/problems/unknown-field"}"#
        )
        #expect(await gateway.request(.delete, "/v1/posts/p1", token: token, json: "{}").status == 204)
        #expect(await gateway.request(.delete, "/v1/posts/p1", token: token).status == 204)
        #expect(gateway.profile.count(Profile.DeletePost.self) == 2)
    }

    @Test func serviceErrorsBecomeProblemDetails() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.GetPost.self) { _, _ in throw ServiceError.notFound("post") }
        let missing = await gateway.request(.get, "/v1/posts/p1", token: token)
        #expect(missing.status == 404 && missing.code == "not_found")
        // No handler: the service does not know the message (a newer gateway than service).
        let unknown = await gateway.request(.get, "/v1/settings", token: token)
        #expect(unknown.status == 502 && unknown.code == "bad_gateway")
        gateway.profile.on(Profile.GetMe.self) { _, _ in
            throw ServiceError(code: ServiceErrorCode.deadlineExceeded.wire, message: "too late", status: 504)
        }
        let late = await gateway.request(.get, "/v1/me", token: token)
        #expect(late.status == 504 && late.code == "service_timeout")
    }

    @Test func theCallsOfARequestCarryItsIdAsTheirTrace() async {
        let token = gateway.signIn("alice")
        let traces = Locked<[String]>([])
        gateway.profile.on(Profile.GetMe.self) { _, context in
            traces.withLock { $0.append(context.trace) }
            return Fixtures.me("alice")
        }
        _ = await gateway.request(.get, "/v1/me", token: token)
        _ = await gateway.request(.get, "/v1/me", token: token)
        let seen = traces.withLock { $0 }
        #expect(seen.count == 2 && Set(seen).count == 2 && !seen.contains(""))
    }

    @Test func everyRequestIsCountedByRouteTemplate() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.GetPost.self) { _, _ in throw ServiceError.notFound("post") }
        _ = await gateway.request(.get, "/v1/posts/p1", token: token)
        _ = await gateway.request(.get, "/v1/nothing")
        let text = gateway.app.metrics.render()
        #expect(text.contains(#"http_requests_total{route="/v1/posts/{id}",method="GET",status="404"} 1"#))
        #expect(text.contains(#"http_requests_total{route="unmatched",method="GET",status="404"} 1"#))
        #expect(text.contains(#"rpc_calls_total{service="profile",type="profile.get_post",outcome="client_error"} 1"#))
    }
}
