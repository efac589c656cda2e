import BackendKit
import Foundation
import Messages
import Testing
import Wire

@testable import NotificationService

/// `notification.import_follows` (ImportHandlers, FollowImport) called directly: edges and counts in
/// one transaction, no notifications, one event per request, idempotent, ids the replica has
/// not seen resolved at AuthService (in batches of its lookup limit), unknown ones 404.
struct ImportFollowsTests {
    func importFollows(
        _ s: InProcessService, _ followee: Identity, _ followers: [Identity], notifyPosts: Bool = true
    ) async throws -> Int {
        try await ImportHandlers(replica: s.app.replica, imports: Imports(allowed: true)).importFollows(
            .init(followeeId: followee.id, followerIds: followers.map(\.id), notifyPosts: notifyPosts),
            RequestContext(
                correlationId: RandomID.make(), type: Notifications.ImportFollows.type, deadline: Timestamp.nowMs() + 60_000,
                trace: RandomID.make(), logger: InProcessService.logger)
        ).created
    }

    func importedEvents(_ s: InProcessService) async throws -> [Notifications.FollowsImported] {
        try await s.database.outbox(after: 0, limit: 1_000).events.filter { $0.type == Notifications.FollowsImported.type }.map {
            try WireJSON.decode(EventEnvelope<Notifications.FollowsImported>.self, from: $0.envelope).body
        }
    }

    @Test func edgesAndCountsWithoutNotificationsAndOneEvent() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let celebrity = try await s.user("celebrity")
        let fans = try await s.users((0..<50).map { "fan\($0)" })
        #expect(try await importFollows(s, celebrity, fans) == 50)
        #expect(try await s.header(celebrity, "celebrity").followers == 50)
        #expect(try await s.header(fans[7], "fan7") == .init(userId: fans[7].id, followers: 0, following: 1, followState: .self))
        #expect(try await s.header(fans[7], "celebrity").followState == .following)
        // Newest edge first, as after 50 follows in order.
        #expect(try await s.edges(celebrity, "celebrity", limit: 3).items.map(\.userId) == fans.suffix(3).reversed().map(\.id))
        // notifyPosts set: they are the new-post fan-out's recipients.
        let notified = try await s.database.read { c in
            try c.query(
                """
                SELECT f.id FROM edges e JOIN identities f ON f.key = e.follower JOIN identities c ON c.key = e.followee
                WHERE c.id = \(celebrity.id) AND e.notify_posts = 1 ORDER BY f.id
                """
            ).map { try $0.string("id") }
        }
        #expect(notified == fans.map(\.id).sorted())
        #expect(try await s.allNotifications(celebrity).isEmpty)
        #expect(try await s.outboxTypes() == [Notifications.FollowsImported.type])
        #expect(
            try await importedEvents(s) == [
                .init(followeeId: celebrity.id, followerIds: fans.map(\.id), notifyPosts: true)
            ])
    }

    @Test func importingAgainCreatesOnlyTheMissingEdges() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let celebrity = try await s.user("celebrity")
        let fans = try await s.users((0..<6).map { "fan\($0)" })
        try await s.follow(fans[5], "celebrity", notifyPosts: false)  // a user's own follow, before
        #expect(try await importFollows(s, celebrity, Array(fans.prefix(3))) == 3)
        // Again with repeats: only fan3 and fan4 are new; fan5's own edge keeps notifyPosts false.
        #expect(try await importFollows(s, celebrity, fans + [fans[3], fans[0]]) == 2)
        #expect(try await importFollows(s, celebrity, fans) == 0)
        #expect(try await s.header(celebrity, "celebrity").followers == 6)
        for (i, fan) in fans.enumerated() {
            #expect(try await s.header(fan, "fan\(i)").following == 1, "fan\(i)")
        }
        let flags = try await s.database.read { c in
            try c.query(
                "SELECT i.id AS follower_id, e.notify_posts FROM edges e JOIN identities i ON i.key = e.follower ORDER BY i.id"
            ).map { "\(try $0.string("follower_id")) \(try $0.bool("notify_posts"))" }
        }
        #expect(flags == fans.map { "\($0.id) \($0.username != "fan5")" })
        #expect(
            try await importedEvents(s).map(\.followerIds) == [
                fans.prefix(3).map(\.id), [fans[3].id, fans[4].id],
            ])
        // Only fan5's own follow made a notification.
        #expect(try await s.allNotifications(celebrity).map(\.actorId) == [fans[5].id])
    }

    @Test func idsTheReplicaHasNotSeenAreLookedUpInBatches() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let celebrity = try await s.user("celebrity", inReplica: false)
        // More than one lookup's worth (1,000 ids), known only to AuthService: a replica that
        // lags behind the import that created them.
        let fans = try await s.users((0..<2_500).map { "fan\($0)" }, inReplica: false)
        #expect(try await importFollows(s, celebrity, fans) == 2_500)
        #expect(try await s.header(celebrity, "celebrity").followers == 2_500)
        let known = try await s.database.read { try $0.scalar("SELECT COUNT(*) FROM identities") }
        #expect(known == 2_501)
    }

    @Test func unknownIdsAre404NamingThemAndNothingIsWritten() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let celebrity = try await s.user("celebrity")
        let fans = try await s.users(["ann", "ben"])
        let ghost = Identity(id: "u-ghost", username: "ghost", email: "ghost@example.com", version: 1)
        let error = await #expect(throws: ServiceError.self) {
            _ = try await importFollows(s, celebrity, [fans[0], ghost, fans[1]])
        }
        #expect(error?.status == 404 && error?.code == "not_found")
        #expect(error?.fields?.map(\.field) == ["followerIds[1]"])
        #expect(error?.message.contains("u-ghost") == true)
        let noFollowee = await #expect(throws: ServiceError.self) { _ = try await importFollows(s, ghost, fans) }
        #expect(noFollowee?.status == 404 && noFollowee?.fields?.map(\.field) == ["followeeId"])
        #expect(try await s.header(celebrity, "celebrity").followers == 0)
        #expect(try await s.outboxTypes().isEmpty)
    }

    @Test func sizeAndSelfAreRefused() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let celebrity = try await s.user("celebrity")
        let fan = try await s.user("fan")
        let none = await #expect(throws: ServiceError.self) { _ = try await importFollows(s, celebrity, []) }
        #expect(none?.status == 400 && none?.code == "invalid_request" && none?.fields?.map(\.field) == ["followerIds"])
        let tooMany = Array(repeating: fan, count: Notifications.ImportFollows.maxFollowers + 1)
        let many = await #expect(throws: ServiceError.self) { _ = try await importFollows(s, celebrity, tooMany) }
        #expect(many?.status == 400 && many?.code == "invalid_request")
        let selfFollow = await #expect(throws: ServiceError.self) {
            _ = try await importFollows(s, celebrity, [fan, celebrity])
        }
        #expect(selfFollow?.status == 422 && selfFollow?.code == "cannot_follow_self")
        #expect(selfFollow?.fields?.map(\.field) == ["followerIds[1]"])
        #expect(try await s.outboxTypes().isEmpty)
    }

    /// NotificationService's replica applies `auth.users.imported` like registrations, keeping
    /// no emails.
    @Test func theReplicaAppliesAnImportEventWithoutEmails() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let imported = (0..<300).map {
            Identity(id: "u-\($0)", username: "user\($0)", email: "user\($0)@example.com", version: 1)
        }
        let replica = s.app.replica
        let changed = try await s.database.write { tx in try replica.apply(imported: imported, in: tx) }
        #expect(changed == 300)
        let rows = try await s.database.read { c in
            (
                try c.scalar("SELECT COUNT(*) FROM identities"),
                try c.scalar("SELECT COUNT(*) FROM identities WHERE email IS NOT NULL")
            )
        }
        #expect(rows.0 == 300 && rows.1 == 0)
        #expect(try await s.header(s.user("viewer"), "USER299").userId == "u-299")
    }
}
