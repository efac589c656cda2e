import Messages
import ServiceKit
import Wire

/// `/healthz`, `/readyz`, `/metrics`, `/openapi.json`.
struct OpsController: Controller {
    let auth: any ServiceBackend
    let profile: any ServiceBackend
    let notification: any ServiceBackend
    let metrics: Metrics

    func register(_ routes: inout RouteCollection) {
        routes.add(.get, "/healthz", authenticated: false) { _ in try .json(HealthShape(status: "ok")) }
        routes.add(.get, "/readyz", authenticated: false) { _ in try await readiness() }
        routes.add(.get, "/metrics", authenticated: false) { _ in await exposition() }
        routes.add(.get, "/openapi.json", authenticated: false) { _ in
            HTTPResponse(
                status: 200, headers: [("Content-Type", "application/vnd.oai.openapi+json;version=3.1")],
                body: Self.openAPIDocument)
        }
    }

    /// The OpenAPI document as served: its `servers` on the public base URL when there is one.
    static let openAPIDocument = PublicLinks.current.openAPIDocument(OpenAPIDocument.bytes)

    /// `GET /readyz` → 200 `{"status": "ready", "services": {"auth": "up", ...}}` when every
    /// service answers a ping within 1 s, else 503 with `"status": "not_ready"` and each state
    /// (`up`, `down`, `timeout`).
    func readiness() async throws -> HTTPResponse {
        async let a = ping(auth)
        async let p = ping(profile)
        async let g = ping(notification)
        let states = await ["auth": a, "profile": p, "notification": g]
        let ready = states.values.allSatisfy { $0 == "up" }
        return try .json(ready ? 200 : 503, ReadinessShape(status: ready ? "ready" : "not_ready", services: states))
    }

    /// Pings a service, retrying a connection that is not up yet until 1 s has passed.
    private func ping(_ backend: any ServiceBackend) async -> String {
        let deadline = Timestamp.nowMs() + 1_000
        while true {
            let remaining = Int(deadline - Timestamp.nowMs())
            guard remaining > 10 else { return "down" }
            do {
                _ = try await backend.call(Ops.Ping.self, Empty(), timeoutMs: remaining)
                return "up"
            } catch let error as ServiceError where error.errorCode == .serviceTimeout {
                return "timeout"
            } catch let error as ServiceError where error.errorCode == .serviceUnavailable {
                try? await Task.sleep(for: .milliseconds(50))
            } catch {
                return "down"
            }
        }
    }

    /// `GET /metrics` → Prometheus text exposition: the gateway's own metrics, then each
    /// service's counters from a ping (`service_up`, `service_uptime_seconds`,
    /// `service_counter{service,name}`, `events_published_total{producer}`), and the moderation
    /// queue from ProfileService (`moderation_open_reports`,
    /// `moderation_oldest_open_report_age_seconds`; left out when it does not answer), asked
    /// concurrently with a 500 ms deadline.
    func exposition() async -> HTTPResponse {
        async let a = counters(auth)
        async let p = counters(profile)
        async let g = counters(notification)
        async let reports = try? profile.call(Profile.ReportStats.self, Empty(), timeoutMs: 500)
        let replies = await [("auth", a), ("profile", p), ("notification", g)]
        var text = metrics.render()
        text += "# HELP service_up Whether the service answered a ping.\n# TYPE service_up gauge\n"
        for (name, reply) in replies { text += "service_up{service=\"\(name)\"} \(reply == nil ? 0 : 1)\n" }
        text += "# HELP service_uptime_seconds Service uptime.\n# TYPE service_uptime_seconds gauge\n"
        for (name, reply) in replies {
            if let reply { text += "service_uptime_seconds{service=\"\(name)\"} \(Double(reply.uptimeMs) / 1000)\n" }
        }
        text += "# HELP events_published_total Events published by each producer.\n"
        text += "# TYPE events_published_total counter\n"
        for (name, reply) in replies {
            if let reply {
                text += "events_published_total{producer=\"\(name)\"} \(reply.counters["events.published"] ?? 0)\n"
            }
        }
        text += "# HELP service_counter A service's own counters (requests by type, errors, events).\n"
        text += "# TYPE service_counter counter\n"
        for (name, reply) in replies {
            for (key, value) in (reply?.counters ?? [:]).sorted(by: { $0.key < $1.key }) {
                text += "service_counter{service=\"\(name)\",name=\"\(Metrics.escape(key))\"} \(value)\n"
            }
        }
        if let stats = await reports {
            text += "# HELP moderation_open_reports Reports no moderator has resolved yet.\n"
            text += "# TYPE moderation_open_reports gauge\nmoderation_open_reports \(stats.open)\n"
            text += "# HELP moderation_oldest_open_report_age_seconds Seconds since the oldest open report was filed "
            text += "(0 with none); App Review expects reports acted on within 24 hours (86400 s).\n"
            text += "# TYPE moderation_oldest_open_report_age_seconds gauge\n"
            text += "moderation_oldest_open_report_age_seconds \(stats.oldestOpenAgeSeconds)\n"
        }
        return HTTPResponse(
            status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(text.utf8))
    }

    private func counters(_ backend: any ServiceBackend) async -> Ops.Ping.Reply? {
        try? await backend.call(Ops.Ping.self, Empty(), timeoutMs: 500)
    }
}
