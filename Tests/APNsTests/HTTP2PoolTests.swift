import Foundation
import TestSupport
import Testing

@testable import APNs

/// The pool below the client: requests beyond `connections × streamsPerConnection` wait in its
/// queue, and all complete over the one connection.
@Suite struct HTTP2PoolTests {
    @Test func requestsBeyondTheStreamCapacityWaitTheirTurn() async throws {
        let apns = try await APNsStandIn.start()
        let key = try ES256Key(pemFile: apns.keyFile)
        let tokens = ProviderTokenCache(key: key, keyID: apns.keyID, teamID: apns.teamID) {
            Int64(Date().timeIntervalSince1970)
        }
        let jwt = try tokens.current().jwt
        let pool = HTTP2Pool(
            settings: HTTP2PoolSettings(
                connections: 1, caFile: apns.caFile, requestTimeoutMs: 30_000, streamsPerConnection: 2))
        defer { pool.shutdown() }
        let deviceTokens = (0..<50).map { String(format: "%064x", $0) }
        let statuses = await withTaskGroup(of: (Int, Int).self) { group in
            for (index, token) in deviceTokens.enumerated() {
                group.addTask {
                    let message = PushMessage(
                        deviceToken: token, collapseID: nil, priority: 5, expiration: 0,
                        payload: Array(#"{"aps":{}}"#.utf8))
                    guard case .success(let request) = APNsRequest.make(message, baseURL: apns.url, topic: apns.topic)
                    else { return (index, -1) }
                    let exchange = HTTP2Exchange(
                        url: request.url, headers: request.headers + ["authorization: bearer \(jwt)"],
                        body: request.body)
                    let result = await withCheckedContinuation { continuation in
                        pool.submit(exchange) { continuation.resume(returning: $0) }
                    }
                    return (index, result.status)
                }
            }
            var statuses = [Int](repeating: 0, count: deviceTokens.count)
            for await (index, status) in group { statuses[index] = status }
            return statuses
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        let stats = try await apns.stats()
        #expect(stats.connections == 1)
        #expect(stats.accepted == 50)
        #expect(Set(try await apns.pushes().map(\.token)) == Set(deviceTokens))
    }
}
