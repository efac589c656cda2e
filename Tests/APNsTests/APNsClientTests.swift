import Foundation
import Harness
import Support
import TestSupport
import Testing

@testable import APNs

/// The client against the stand-in APNs (scripts/apns-standin.py): every request crosses real
/// HTTP/2 over TLS, and the stand-in checks the provider token's signature with the public key.
@Suite struct APNsClientTests {
    static let payload = #"{"aps":{"alert":{"title":"New like","body":"ana liked your post"},"badge":3,"thread-id":"like"}}"#

    static func token() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func message(_ token: String = token(), collapseID: String? = "like-42") -> PushMessage {
        PushMessage(
            deviceToken: token, collapseID: collapseID, priority: 10, expiration: 1_900_000_000,
            payload: Array(payload.utf8))
    }

    /// A client configured from the stand-in's environment, as a service would be.
    static func client(_ apns: APNsStandIn, connections: Int? = nil) throws -> APNsClient {
        var environment = apns.environment
        if let connections { environment["APNS_CONNECTIONS"] = "\(connections)" }
        return try APNsClient(configuration: try #require(try APNsConfiguration.fromEnvironment(environment)))
    }

    @Test func sentPushCarriesPathHeadersTokenAndPayload() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        let token = Self.token()
        let outcomes = await client.send([Self.message(token)])
        guard case .sent(let apnsID) = try #require(outcomes.first), outcomes.count == 1 else {
            Issue.record("expected one .sent, got \(outcomes)")
            return
        }
        #expect(apnsID?.isEmpty == false)
        let pushes = try await apns.pushes()
        try #require(pushes.count == 1)
        let push = pushes[0]
        #expect(push.path == "/3/device/\(token)")
        #expect(push.token == token)
        #expect(push.payload == Self.payload)
        #expect(push.headers["apns-topic"] == "com.example.insta")
        #expect(push.headers["apns-push-type"] == "alert")
        #expect(push.headers["apns-priority"] == "10")
        #expect(push.headers["apns-expiration"] == "1900000000")
        #expect(push.headers["apns-collapse-id"] == "like-42")
        #expect(push.headers["content-type"] == "application/json")
        let authorization = try #require(push.headers["authorization"])
        #expect(authorization.hasPrefix("bearer "))
        let jwt = String(authorization.dropFirst("bearer ".count))
        let verifier = JWTVerifier(publicKeyFile: apns.publicKeyFile)
        #expect(verifier.verifies(jwt))
        let claims = try #require(verifier.decode(jwt)).claims
        #expect(claims["iss"] as? String == "TEAM123456")
        // No collapse id: no header.
        _ = await client.send([Self.message(collapseID: nil)])
        let second = try await apns.pushes(atLeast: 2)
        #expect(second.count == 2 && second[1].headers["apns-collapse-id"] == nil)
        // The same token and the same connection for both.
        #expect(second[1].headers["authorization"] == authorization)
        #expect(try await apns.stats().connections == 1)
    }

    @Test func unregisteredRemovesTheDeviceWithItsTimestamp() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        let token = Self.token()
        try await apns.add(.unregistered(token: token, timestamp: 1_700_000_000_123))
        let outcomes = await client.send([Self.message(token), Self.message()])
        #expect(outcomes.count == 2)
        #expect(outcomes.first == .removeDevice(reason: "Unregistered", unregisteredAt: 1_700_000_000_123))
        if case .sent = outcomes.last {} else { Issue.record("the other device's push: \(outcomes)") }
    }

    @Test func badDeviceTokenRemovesTheDevice() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        try await apns.add(.badDeviceToken())
        #expect(await client.send([Self.message()]) == [.removeDevice(reason: "BadDeviceToken", unregisteredAt: nil)])
    }

    @Test func expiredProviderTokenIsRenewedOnceAndThePushSentAgain() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        try await apns.add(.expiredProviderToken())
        let outcomes = await client.send([Self.message()])
        if case .sent = outcomes.first {} else { Issue.record("expected .sent after one renewal, got \(outcomes)") }
        let requests = try await apns.requests()
        #expect(requests.map(\.status) == [403, 200])
        #expect(requests.first?.reason == "ExpiredProviderToken")
        #expect(requests[0].headers["authorization"] != requests[1].headers["authorization"])
        #expect(client.tokens.tokensMade == 2)
        #expect(try await apns.stats().tokens == 2)
        // The new token is kept for what follows.
        _ = await client.send([Self.message()])
        #expect(client.tokens.tokensMade == 2)
    }

    @Test func theProviderTokenIsReusedThenRenewedAtFortyMinutes() async throws {
        let apns = try await APNsStandIn.start()
        let configuration = try #require(try APNsConfiguration.fromEnvironment(apns.environment))
        let start = Int64(Date().timeIntervalSince1970) - 41 * 60
        let now = Locked(start)
        let client = try APNsClient(configuration: configuration, clock: { now.get() })
        for _ in 0..<3 { _ = await client.send([Self.message()]) }
        #expect(try await apns.stats().tokens == 1)
        now.set(start + 40 * 60 - 1)
        _ = await client.send([Self.message()])
        #expect(try await apns.stats().tokens == 1)
        now.set(start + 41 * 60)
        _ = await client.send([Self.message()])
        let stats = try await apns.stats()
        #expect(stats.tokens == 2)
        #expect(stats.accepted == 5)
        #expect(client.tokens.tokensMade == 2)
    }

    @Test func aTokenRejectedTwiceIsDroppedNotRenewedAgain() async throws {
        let apns = try await APNsStandIn.start()
        // A key the stand-in does not know: every token is InvalidProviderToken.
        let other = makeTemporaryDirectory("apns-other-key")
        try APNsStandIn.makeCredentials(in: other)
        var environment = apns.environment
        environment["APNS_KEY_FILE"] = "\(other)/apns-key.p8"
        let client = try APNsClient(configuration: try #require(try APNsConfiguration.fromEnvironment(environment)))
        #expect(await client.send([Self.message()]) == [.dropped(reason: "InvalidProviderToken")])
        #expect(try await apns.requests().map(\.reason) == ["InvalidProviderToken", "InvalidProviderToken"])
        #expect(client.tokens.tokensMade == 2)
    }

    @Test func payloadTooLargeIsDropped() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        try await apns.add(.payloadTooLarge())
        #expect(await client.send([Self.message()]) == [.dropped(reason: "PayloadTooLarge")])
    }

    @Test func tooManyRequestsRetriesAfterRetryAfter() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        try await apns.add(.tooManyRequests(retryAfter: 7))
        #expect(await client.send([Self.message()]) == [.retry(reason: "TooManyRequests", after: 7)])
    }

    @Test func serviceUnavailableRetries() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        try await apns.add(.serviceUnavailable())
        #expect(await client.send([Self.message()]) == [.retry(reason: "ServiceUnavailable", after: nil)])
    }

    @Test func aDroppedConnectionRetriesAndTheNextSendReconnects() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        try await apns.add(.dropConnection())
        let outcomes = await client.send([Self.message()])
        guard case .retry(_, nil) = try #require(outcomes.first) else {
            Issue.record("expected .retry, got \(outcomes)")
            return
        }
        if case .sent = await client.send([Self.message()]).first {} else { Issue.record("the next send failed") }
        let stats = try await apns.stats()
        #expect(stats.connections == 2)
        #expect(stats.accepted == 1)
        #expect(try await apns.pushes().map(\.connection) == [2])
    }

    @Test func aConnectionDroppedAfterCarryingPushesIsReplaced() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        if case .sent = await client.send([Self.message()]).first {} else { Issue.record("the first send failed") }
        try await apns.add(.dropConnection())
        guard case .retry(_, nil) = try #require(await client.send([Self.message()]).first) else {
            Issue.record("expected .retry")
            return
        }
        if case .sent = await client.send([Self.message()]).first {} else { Issue.record("the third send failed") }
        #expect(try await apns.requests().map(\.connection) == [1, 1, 2])
        #expect(try await apns.stats().connections == 2)
    }

    @Test func aPoolOfOneCarriesEveryPushOnOneConnection() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns, connections: 1)
        let outcomes = await withTaskGroup(of: [PushOutcome].self) { group in
            for _ in 0..<300 { group.addTask { await client.send([Self.message()]) } }
            var all: [PushOutcome] = []
            for await outcome in group { all += outcome }
            return all
        }
        #expect(outcomes.count == 300)
        #expect(outcomes.allSatisfy { if case .sent = $0 { true } else { false } })
        let stats = try await apns.stats()
        #expect(stats.connections == 1)
        #expect(stats.accepted == 300)
    }

    @Test func concurrentSendsShareThePoolsConnections() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns, connections: 2)
        let outcomes = await withTaskGroup(of: [PushOutcome].self) { group in
            for _ in 0..<200 { group.addTask { await client.send([Self.message()]) } }
            var all: [PushOutcome] = []
            for await outcome in group { all += outcome }
            return all
        }
        #expect(outcomes.count == 200)
        #expect(outcomes.allSatisfy { if case .sent = $0 { true } else { false } })
        let stats = try await apns.stats()
        #expect(stats.accepted == 200)
        #expect(stats.connections >= 1 && stats.connections <= 2)
        #expect(stats.tokens == 1)
        #expect(Set(try await apns.pushes().map(\.token)).count == 200)
    }

    @Test func oneSendKeepsItsMessagesInOrder() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        let gone = Self.token()
        try await apns.add(.unregistered(token: gone, timestamp: 42))
        var tooLong = Self.message()
        tooLong.collapseID = String(repeating: "x", count: 65)
        let outcomes = await client.send([Self.message(), tooLong, Self.message(gone), Self.message("not hex")])
        #expect(outcomes.count == 4)
        if case .sent = outcomes[0] {} else { Issue.record("first: \(outcomes[0])") }
        #expect(outcomes[1] == .dropped(reason: "BadCollapseId"))
        #expect(outcomes[2] == .removeDevice(reason: "Unregistered", unregisteredAt: 42))
        #expect(outcomes[3] == .removeDevice(reason: "BadDeviceToken", unregisteredAt: nil))
        #expect(await client.send([]) == [])
    }

    @Test func theStandInRefusesWhatAPNsWould() async throws {
        let apns = try await APNsStandIn.start()
        var environment = apns.environment
        environment["APNS_TOPIC"] = "com.example.other"
        let wrongTopic = try APNsClient(configuration: try #require(try APNsConfiguration.fromEnvironment(environment)))
        #expect(await wrongTopic.send([Self.message()]) == [.dropped(reason: "BadTopic")])
        let client = try Self.client(apns)
        var noAps = Self.message()
        noAps.payload = Array(#"{"alert":"hi"}"#.utf8)
        #expect(await client.send([noAps]) == [.dropped(reason: "BadPayload")])
        // A token issued two hours ago: expired, renewed once with the same clock, still expired.
        let configuration = try #require(try APNsConfiguration.fromEnvironment(apns.environment))
        let past = Int64(Date().timeIntervalSince1970) - 7_200
        let stale = try APNsClient(configuration: configuration, clock: { past })
        #expect(await stale.send([Self.message()]) == [.dropped(reason: "ExpiredProviderToken")])
        #expect(try await apns.stats().accepted == 0)
    }

    @Test func afterShutdownSendsRetry() async throws {
        let apns = try await APNsStandIn.start()
        let client = try Self.client(apns)
        client.shutdown()
        #expect(await client.send([Self.message()]) == [.retry(reason: "client shut down", after: nil)])
    }

    @Test func unreachableServerRetries() async throws {
        let apns = try await APNsStandIn.start()
        var environment = apns.environment
        apns.stop()
        environment["APNS_URL"] = "https://127.0.0.1:\(apns.port)"
        let client = try APNsClient(configuration: try #require(try APNsConfiguration.fromEnvironment(environment)))
        guard case .retry(_, nil) = try #require(await client.send([Self.message()]).first) else {
            Issue.record("expected .retry")
            return
        }
    }
}
