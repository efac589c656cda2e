import Foundation
import Harness
import TestSupport
import Testing
import Wire

/// The gateway in the real cluster (the four executables): operations endpoints, problem details
/// for bad input, and 503 when a service is down.
@Suite(.serialized) struct GatewayHTTPTests {
    /// Starts the four executables.
    private func cluster() async throws -> Cluster {
        let cluster = Cluster()
        try await cluster.start(["auth", "profile", "notification", "gateway"])
        return cluster
    }

    private func expectProblem(
        _ r: HTTPResponse, _ status: Int, _ code: String, field: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == status, sourceLocation: sourceLocation)
        #expect(r.header("content-type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(r.object["code"] as? String == code, sourceLocation: sourceLocation)
        #expect(r.object["status"] as? Int == status, sourceLocation: sourceLocation)
        #expect(
            r.object["type"] is String && r.object["title"] is String && r.object["detail"] is String,
            sourceLocation: sourceLocation)
        if let field {
            let errors = r.object["errors"] as? [[String: Any]] ?? []
            #expect(errors.first?["field"] as? String == field, sourceLocation: sourceLocation)
        }
    }

    @Test func operationsEndpoints() async throws {
        let c = try await cluster()
        defer { c.stopAll() }
        let port = c.gatewayPort
        let health = try await fetch(port, "GET", "/healthz")
        #expect(health.status == 200 && health.object["status"] as? String == "ok")
        var ready = try await fetch(port, "GET", "/readyz")
        let deadline = Timestamp.nowMs() + 60_000
        while ready.status != 200 && Timestamp.nowMs() < deadline {
            ready = try await fetch(port, "GET", "/readyz")
        }
        #expect(ready.status == 200)
        #expect(
            ready.object["services"] as? [String: String] == [
                "auth": "up", "profile": "up", "notification": "up",
            ])
        // The services' lines come from pings with a 500 ms deadline: ask until all answered.
        var metrics = try await fetch(port, "GET", "/metrics")
        while !metrics.text.contains("service_up{service=\"notification\"} 1")
            || !metrics.text.contains("service_up{service=\"auth\"} 1")
            || !metrics.text.contains("service_up{service=\"profile\"} 1"), Timestamp.nowMs() < deadline
        {
            metrics = try await fetch(port, "GET", "/metrics")
        }
        #expect(metrics.status == 200)
        for name in [
            "http_requests_total{route=\"/readyz\",method=\"GET\",status=\"200\"}",
            "http_request_duration_seconds_bucket",
            "rpc_calls_total{service=\"auth\",type=\"ops.ping\",outcome=\"ok\"}",
            "rpc_call_duration_seconds_bucket",
            "sse_open_streams 0", "events_delivered_total 0", "events_dropped_total 0",
            "service_up{service=\"auth\"} 1", "events_published_total{producer=\"notification\"} 0",
        ] {
            #expect(metrics.text.contains(name), "metrics lack \(name)")
        }
        let openapi = try await fetch(port, "GET", "/openapi.json")
        #expect(openapi.status == 200 && openapi.json != nil)
    }

    @Test func badInputGivesProblemDetails() async throws {
        let c = try await cluster()
        defer { c.stopAll() }
        let port = c.gatewayPort
        expectProblem(try await fetch(port, "GET", "/nope"), 404, "not_found")
        expectProblem(try await fetch(port, "DELETE", "/v1/auth/login"), 405, "method_not_allowed")
        expectProblem(try await fetch(port, "GET", "/v1/me"), 401, "unauthorized")
        expectProblem(
            try await fetch(port, "GET", "/v1/me", headers: ["Authorization": "Basic abc"]), 401,
            "unauthorized")
        expectProblem(
            try await fetch(
                port, "POST", "/v1/auth/login", raw: Array("login=a".utf8),
                headers: ["Content-Type": "text/plain"]), 415,
            "unsupported_media_type")
        expectProblem(
            try await fetch(
                port, "POST", "/v1/auth/login", raw: Array("{\"login\":".utf8),
                headers: ["Content-Type": "application/json"]),
            400, "malformed_json")
        expectProblem(
            try await fetch(
                port, "POST", "/v1/auth/login", json: ["login": "a", "password": "b", "admin": true]), 400,
            "unknown_field",
            field: "admin")
        expectProblem(
            try await fetch(port, "POST", "/v1/auth/login", json: ["login": 5, "password": "b"]), 400,
            "invalid_field", field: "login")
        expectProblem(
            try await fetch(port, "POST", "/v1/auth/login", json: ["password": "b"]), 400,
            "invalid_field", field: "login")
        expectProblem(
            try await fetch(
                port,
                "POST", "/v1/auth/register",
                json: [
                    "email": "a@b.co", "username": "abc", "password": "12345678", "birthDate": "1990-13-01",
                ]),
            400, "invalid_field", field: "birthDate")
        let big = [UInt8](repeating: UInt8(ascii: " "), count: (1 << 20) + 1)
        expectProblem(
            try await fetch(
                port, "POST", "/v1/auth/login", raw: big, headers: ["Content-Type": "application/json"]),
            413, "payload_too_large")
    }

    @Test func limitIsValidatedAfterAuthentication() async throws {
        // The placeholder AuthService has no auth.validate yet, so use a route where the limit is
        // checked: a token is required first, so only the 401 is visible here; the limit rules
        // are covered in the fake-backed suite.
        let c = try await cluster()
        defer { c.stopAll() }
        let port = c.gatewayPort
        expectProblem(try await fetch(port, "GET", "/v1/notifications?limit=0"), 401, "unauthorized")
    }

    @Test func aKilledServiceGives503QuicklyAndReadyzSaysWhich() async throws {
        let c = try await cluster()
        defer { c.stopAll() }
        let port = c.gatewayPort
        c.kill("auth")
        let r = try await fetch(port, "GET", "/v1/me", token: "some-token")
        expectProblem(r, 503, "service_unavailable")
        let ready = try await fetch(port, "GET", "/readyz")
        #expect(ready.status == 503)
        #expect((ready.object["services"] as? [String: String])?["auth"] != "up")
        #expect((ready.object["services"] as? [String: String])?["profile"] == "up")
        try await c.start("auth")
        let deadline = Timestamp.nowMs() + 60_000
        var status = 0
        while Timestamp.nowMs() < deadline {
            status = try await fetch(port, "GET", "/readyz").status
            if status == 200 { break }
        }
        #expect(status == 200)
    }
}
