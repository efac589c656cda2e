import Messages
import Testing
import Wire

@testable import Gateway

/// `/healthz`, `/readyz`, `/metrics` and `/openapi.json` in process.
@Suite struct OpsControllerTests {
    let gateway = InProcessGateway()

    func answerPings(_ services: [FakeService]) {
        for service in services {
            service.on(Ops.Ping.self) { _, _ in
                .init(service: service.service, uptimeMs: 1_500, counters: ["events.published": 4])
            }
        }
    }

    @Test func readinessNamesEachServicesState() async {
        answerPings([gateway.auth, gateway.notification])
        gateway.profile.on(Ops.Ping.self) { _, _ in
            throw ServiceError(code: ServiceErrorCode.serviceTimeout.wire, message: "no answer", status: 504)
        }
        let r = await gateway.request(.get, "/readyz")
        #expect(r.status == 503)
        #expect(r.text == #"{"services":{"auth":"up","notification":"up","profile":"timeout"},"status":"not_ready"}"#)
        answerPings([gateway.profile])
        #expect(await gateway.request(.get, "/readyz").status == 200)
        #expect(await gateway.request(.get, "/healthz").text == #"{"status":"ok"}"#)
    }

    @Test func metricsAddEachServicesCountersToTheGatewaysOwn() async {
        answerPings([gateway.auth, gateway.profile, gateway.notification])
        let r = await gateway.request(.get, "/metrics")
        #expect(r.status == 200 && r.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        #expect(r.text.contains(#"service_up{service="profile"} 1"#))
        #expect(r.text.contains(#"service_uptime_seconds{service="auth"} 1.5"#))
        #expect(r.text.contains(#"events_published_total{producer="notification"} 4"#))
        #expect(r.text.contains(#"rpc_calls_total{service="auth",type="ops.ping",outcome="ok"} 1"#))
    }

    @Test func theOpenAPIDocumentIsServedAsEmbedded() async {
        let r = await gateway.request(.get, "/openapi.json")
        #expect(r.status == 200 && r.bytes == OpenAPIDocument.bytes)
        #expect(r.header("Content-Type") == "application/vnd.oai.openapi+json;version=3.1")
    }
}
