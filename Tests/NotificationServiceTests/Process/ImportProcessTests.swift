import Foundation
import Shared
import TestSupport
import Testing

/// The bulk imports through the real NotificationService executable: users arrive as one
/// `auth.users.imported` event (AuthService answering no lookups, so only the event can have
/// told the service), then `notification.import_follows` over ZeroMQ makes them follow one account.
@Suite(.serialized) struct ImportProcessTests {
    @Test func importedUsersAndFollowsThroughTheRealService() async throws {
        let h = try await ProcessHarness(answersLookups: false)
        defer { h.shutdown() }
        let users = try await h.auth.importUsers((0..<1_200).map { "imported\($0)" })
        try await h.waitForEvents(of: h.auth.producer)
        let (celebrity, fans) = (users[0], Array(users.dropFirst()))
        let reply = try await h.client.call(
            Notifications.ImportFollows.self, .init(followeeId: celebrity.id, followerIds: fans.map(\.id), notifyPosts: true))
        #expect(reply.created == 1_199)
        #expect(try await h.header(fans[0], "imported0").followers == 1_199)
        #expect(try await h.header(fans[0], "imported1").following == 1)
        #expect(try await h.notifications(celebrity).items.isEmpty)
        // Sent again (a resumed setup): nothing new.
        let again = try await h.client.call(
            Notifications.ImportFollows.self, .init(followeeId: celebrity.id, followerIds: fans.map(\.id), notifyPosts: true))
        #expect(again.created == 0)
        // An id nobody knows: 404 over the wire, naming it.
        let error = await #expect(throws: ServiceError.self) {
            _ = try await h.client.call(
                Notifications.ImportFollows.self, .init(followeeId: celebrity.id, followerIds: ["nobody"], notifyPosts: true))
        }
        #expect(error?.status == 404 && error?.fields?.map(\.field) == ["followerIds[0]"])
    }
}
