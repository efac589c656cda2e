import Foundation
import Shared

/// `/healthz`, `/readyz`, `/metrics`, `/openapi.json`.
extension Gateway {
  /// `GET /healthz` → 200 `{"status": "ok"}` while the process runs.
  func healthz(_ call: Call) -> HTTPResponse { reply(200, ["status": "ok"]) }

  /// `GET /readyz` → 200 `{"status": "ready", "services": {"auth": "up", ...}}` when every
  /// service answers a ping within 1 s, else 503 with `"status": "not_ready"` and each state
  /// (`up`, `down`, `timeout`).
  func readyz(_ call: Call) async -> HTTPResponse {
    async let a = ping(auth)
    async let p = ping(profile)
    async let g = ping(graph)
    let states = await ["auth": a, "profile": p, "notification": g]
    let ready = states.values.allSatisfy { $0 == "up" }
    return reply(ready ? 200 : 503, ["status": ready ? "ready" : "not_ready", "services": states])
  }

  /// Pings a service, retrying a connection that is not up yet until 1 s has passed.
  private func ping(_ backend: Backend) async -> String {
    let deadline = Timestamp.nowMs() + 1_000
    while true {
      let remaining = Int(deadline - Timestamp.nowMs())
      guard remaining > 10 else { return "down" }
      do {
        _ = try await backend.call(Ops.Ping.self, Empty(), timeoutMs: remaining)
        return "up"
      } catch let error as ServiceError where error.code == "service_timeout" {
        return "timeout"
      } catch let error as ServiceError where error.code == "service_unavailable" {
        try? await Task.sleep(for: .milliseconds(50))
      } catch {
        return "down"
      }
    }
  }

  /// `GET /metrics` → Prometheus text exposition.
  func metricsText(_ call: Call) -> HTTPResponse {
    HTTPResponse(
      status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
      body: Array(metrics.render().utf8))
  }

  /// `GET /openapi.json` → the OpenAPI 3.1 document.
  func openAPI(_ call: Call) -> HTTPResponse { .json(200, Array(OpenAPI.document().utf8)) }
}
