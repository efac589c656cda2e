import Foundation
import TestSupport
import Testing

/// The gateway's own checks of requests (syntax: JSON shape, types, paging parameters), with
/// fake services behind it; what values mean is checked by the services (ContractTests).
@Suite struct GatewayValidationTests {
    @Test func limitMustBeAnIntegerFrom1To100() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        for bad in ["0", "101", "abc", "1.5", "-1", ""] {
            let r = try await h.request("GET", "/v1/notifications?limit=\(bad)", token: alice)
            #expect(r.status == 400, "limit=\(bad)")
            #expect(r.object["code"] as? String == "invalid_field")
            #expect((r.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "limit")
        }
        for good in ["1", "100"] {
            #expect(
                try await h.request("GET", "/v1/notifications?limit=\(good)", token: alice).status == 200)
        }
    }

    @Test func bodiesRejectUnknownFieldsAndWrongTypes() async throws {
        let h = try await GatewayHarness.start()
        defer { h.stop() }
        let alice = h.fakes.addUser("alice")
        let unknown = try await h.request(
            "PATCH", "/v1/me/profile", token: alice, json: ["bio": "x", "isAdmin": true])
        #expect(unknown.status == 400 && unknown.object["code"] as? String == "unknown_field")
        #expect((unknown.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "isAdmin")
        let wrongType = try await h.request(
            "PATCH", "/v1/settings", token: alice, json: ["saveOriginalPosts": 1])
        #expect(wrongType.status == 400 && wrongType.object["code"] as? String == "invalid_field")
        let negative = try await h.request(
            "POST", "/v1/notifications/read", token: alice, json: ["upToSeq": -1])
        #expect(
            negative.status == 400
                && (negative.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "upToSeq")
        let fraction = try await h.request(
            "POST", "/v1/notifications/read", token: alice, json: ["upToSeq": 1.5])
        #expect(fraction.status == 400)
        let wrongTypeText = try await h.request("POST", "/v1/posts/p1/comments", token: alice, json: ["text": 12])
        #expect(
            wrongTypeText.status == 400
                && (wrongTypeText.object["errors"] as? [[String: Any]])?.first?["field"] as? String == "text")
        let badSince = try await h.request("GET", "/v1/notifications/stream?since=abc", token: alice)
        #expect(badSince.status == 400)
    }
}
