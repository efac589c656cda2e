import Foundation
import Messages
import TestSupport
import Testing
import Wire

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

    @Test func importedDevicesThroughTheRealService() async throws {
        let h = try await ProcessHarness(answersLookups: false)
        defer { h.shutdown() }
        let users = try await h.auth.importUsers((0..<600).map { "withdevice\($0)" })
        try await h.waitForEvents(of: h.auth.producer)
        func token(_ i: Int) -> String { String(repeating: "ab", count: 16) + String(format: "%032x", i) }
        let devices = users.enumerated().map {
            Notifications.ImportDevices.Device(
                userId: $0.element.id, sessionId: "s-\($0.offset % 300)", token: token($0.offset), environment: "sandbox")
        }
        #expect(try await h.client.call(Notifications.ImportDevices.self, .init(devices: devices)).created == 600)
        // Sent again (a resumed setup): nothing new, nothing moved.
        #expect(try await h.client.call(Notifications.ImportDevices.self, .init(devices: devices)).created == 0)
        let listed = try await h.client.call(
            Notifications.ListDevices.self, .init(userId: users[7].id, page: .init()))
        #expect(listed.items.count == 1 && listed.items[0].environment == "sandbox")
        // A bad token and an unknown user: each named.
        let bad = await #expect(throws: ServiceError.self) {
            _ = try await h.client.call(
                Notifications.ImportDevices.self,
                .init(devices: [.init(userId: users[0].id, sessionId: "s-0", token: "xyz", environment: "sandbox")]))
        }
        #expect(bad?.status == 400 && bad?.fields?.map(\.field) == ["devices[0].token"])
        let unknown = await #expect(throws: ServiceError.self) {
            _ = try await h.client.call(
                Notifications.ImportDevices.self,
                .init(devices: [.init(userId: "nobody", sessionId: "s-0", token: token(9_999), environment: "sandbox")]))
        }
        #expect(unknown?.status == 404 && unknown?.fields?.map(\.field) == ["devices[0].userId"])
        // An imported device belongs to its session: the logout of session s-7 removes the
        // devices of users 7 and 307, and a device of that session is not imported again.
        let auth = h.auth
        try await auth.producer.emit(Auth.SessionRevoked(userId: users[7].id, sessionIds: ["s-7"]))
        try await auth.producer.emit(Auth.SessionRevoked(userId: users[307].id, sessionIds: ["s-7"]))
        try await h.waitForEvents(of: auth.producer)
        for i in [7, 307] {
            #expect(
                try await h.client.call(Notifications.ListDevices.self, .init(userId: users[i].id, page: .init())).items
                    .isEmpty)
        }
        #expect(try await h.client.call(Notifications.ImportDevices.self, .init(devices: devices)).created == 0)
        // And obeys the cap: 25 devices of one user, the 20 newest kept.
        let many = (0..<25).map {
            Notifications.ImportDevices.Device(
                userId: users[1].id, sessionId: "s-1", token: token(10_000 + $0), environment: "sandbox")
        }
        #expect(try await h.client.call(Notifications.ImportDevices.self, .init(devices: many)).created == 25)
        let kept = try await h.client.call(
            Notifications.ListDevices.self, .init(userId: users[1].id, page: .init(limit: 100))
        ).items
        #expect(kept.count == 20)
    }
}
