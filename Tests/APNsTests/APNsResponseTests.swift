import Foundation
import Testing

@testable import APNs

/// The classification table of "Handling notification responses from APNs" (developer.apple.com).
@Suite struct APNsResponseTests {
    func decide(_ status: Int, _ body: String = "", headers: [String: String] = [:], renewed: Bool = false)
        -> APNsResponse.Decision
    {
        APNsResponse(status: status, headers: headers, body: Array(body.utf8), now: 1_700_000_000)
            .decision(tokenRenewed: renewed)
    }

    @Test func classification() {
        #expect(decide(200, headers: ["apns-id": "ID-1"]) == .outcome(.sent(apnsID: "ID-1")))
        #expect(
            decide(400, #"{"reason":"BadDeviceToken"}"#)
                == .outcome(.removeDevice(reason: "BadDeviceToken", unregisteredAt: nil)))
        #expect(
            decide(400, #"{"reason":"DeviceTokenNotForTopic"}"#)
                == .outcome(.removeDevice(reason: "DeviceTokenNotForTopic", unregisteredAt: nil)))
        #expect(
            decide(410, #"{"reason":"Unregistered","timestamp":1699999999123}"#)
                == .outcome(.removeDevice(reason: "Unregistered", unregisteredAt: 1_699_999_999_123)))
        #expect(
            decide(403, #"{"reason":"ExpiredProviderToken"}"#)
                == .renewTokenAndResend(reason: "ExpiredProviderToken"))
        #expect(
            decide(403, #"{"reason":"InvalidProviderToken"}"#)
                == .renewTokenAndResend(reason: "InvalidProviderToken"))
        #expect(
            decide(403, #"{"reason":"InvalidProviderToken"}"#, renewed: true)
                == .outcome(.dropped(reason: "InvalidProviderToken")))
        #expect(decide(403, #"{"reason":"BadCertificate"}"#) == .outcome(.dropped(reason: "BadCertificate")))
        #expect(decide(413, #"{"reason":"PayloadTooLarge"}"#) == .outcome(.dropped(reason: "PayloadTooLarge")))
        #expect(decide(400, #"{"reason":"BadCollapseId"}"#) == .outcome(.dropped(reason: "BadCollapseId")))
        #expect(decide(400, #"{"reason":"IdleTimeout"}"#) == .outcome(.retry(reason: "IdleTimeout", after: nil)))
        #expect(
            decide(429, #"{"reason":"TooManyRequests"}"#, headers: ["retry-after": "7"])
                == .outcome(.retry(reason: "TooManyRequests", after: 7)))
        #expect(
            decide(500, #"{"reason":"InternalServerError"}"#)
                == .outcome(.retry(reason: "InternalServerError", after: nil)))
        #expect(
            decide(503, #"{"reason":"ServiceUnavailable"}"#, headers: ["retry-after": "2.5"])
                == .outcome(.retry(reason: "ServiceUnavailable", after: 2.5)))
        #expect(decide(502, "<html>bad gateway</html>") == .outcome(.retry(reason: "HTTP 502", after: nil)))
        #expect(decide(404, #"{"reason":"BadPath"}"#) == .outcome(.dropped(reason: "BadPath")))
    }

    @Test func retryAfterTakesSecondsOrAnHTTPDate() {
        #expect(APNsResponse.seconds(retryAfter: "120", now: 0) == 120)
        #expect(APNsResponse.seconds(retryAfter: "Tue, 14 Nov 2023 22:13:30 GMT", now: 1_700_000_000) == 10)
        #expect(APNsResponse.seconds(retryAfter: "Tue, 14 Nov 2023 22:13:10 GMT", now: 1_700_000_000) == 0)
        #expect(APNsResponse.seconds(retryAfter: "soon", now: 0) == nil)
        #expect(APNsResponse.seconds(retryAfter: "-3", now: 0) == nil)
    }

    @Test func messagesAPNsWouldRefuseAreNotSent() {
        func outcome(_ message: PushMessage) -> PushOutcome? {
            if case .failure(let rejection) = APNsRequest.make(message, baseURL: "https://x", topic: "t") {
                return rejection.outcome
            }
            return nil
        }
        let good = PushMessage(
            deviceToken: String(repeating: "ab", count: 32), collapseID: "like-1", priority: 10, expiration: 0,
            payload: Array(#"{"aps":{}}"#.utf8))
        #expect(outcome(good) == nil)
        var m = good
        m.deviceToken = "abc/../x"
        #expect(outcome(m) == .removeDevice(reason: "BadDeviceToken", unregisteredAt: nil))
        m.deviceToken = ""
        #expect(outcome(m) == .removeDevice(reason: "BadDeviceToken", unregisteredAt: nil))
        m = good
        m.collapseID = String(repeating: "c", count: 65)
        #expect(outcome(m) == .dropped(reason: "BadCollapseId"))
        m.collapseID = String(repeating: "c", count: 64)
        #expect(outcome(m) == nil)
        m.collapseID = "a\r\nauthorization: x"
        #expect(outcome(m) == .dropped(reason: "BadCollapseId"))
        m = good
        m.priority = 1
        #expect(outcome(m) == .dropped(reason: "BadPriority"))
        m = good
        m.payload = []
        #expect(outcome(m) == .dropped(reason: "PayloadEmpty"))
        m.payload = [UInt8](repeating: 0x20, count: 4097)
        #expect(outcome(m) == .dropped(reason: "PayloadTooLarge"))
        m.payload = [UInt8](repeating: 0x20, count: 4096)
        #expect(outcome(m) == nil)
    }
}
