import Foundation
import Harness
import Messages
import Storage
import Testing
import Wire

@testable import NotificationService

/// A suspended (or deleting) account in NotificationService (API.md "Account lifecycle and
/// moderation": its notifications to others are hidden, its follows stay, lifting it restores all
/// of it), on the engine `TEST_STORAGE_ENGINE` names, with the account worker run one batch at a
/// time (`AccountWorker.step`) in batches of two rows, over `AccountWorld`.
@Suite(.serialized)
struct AccountSuspensionTests {
    /// The others' notifications as they see them (flat, groups, badge), by username.
    static func views(_ w: AccountWorld) async throws -> [String: AccountChecks.View] {
        var views: [String: AccountChecks.View] = [:]
        for user in w.others { views[user.username] = try await AccountChecks.view(user, in: w.service) }
        return views
    }

    /// The stored rows a hold and its restore touch, as text: every notification (both tables,
    /// where it is), every group (with its position), the unread tombstones, each recipient's read
    /// mark and removed-unread count. (`head_floor` only rises; queued pushes are dropped.)
    static func stored(_ w: AccountWorld) async throws -> [String] {
        try await w.service.database.read { c in
            var lines: [String] = []
            for (name, sql): (String, SQL) in [
                ("recent", "SELECT recipient, seq, type, actor, post, once, detail, created_at, grp FROM recent_notifications"),
                ("merged", "SELECT recipient, seq, type, actor, post, once, detail, created_at, grp FROM notifications"),
                ("group", "SELECT * FROM notification_groups"), ("tombstone", "SELECT * FROM removed_unread"),
                ("recipient", "SELECT recipient, read_seq, removed_unread FROM recipients"),
            ] {
                lines += try c.query(sql).map { row in
                    name + " " + zip(row.columns.names, row.values).map { "\($0)=\($1)" }.joined(separator: " ")
                }
            }
            return lines.sorted()
        }
    }

    /// Queued pushes whose notification is not stored (none may be left by a hold).
    static func orphanPushes(_ w: AccountWorld) async throws -> Int64 {
        try await w.service.database.read { c in
            try c.scalar(
                """
                SELECT COUNT(*) FROM push_queue q
                WHERE NOT EXISTS (SELECT 1 FROM all_notifications n WHERE n.recipient = q.recipient AND n.seq = q.seq)
                """) ?? 0
        }
    }

    static func count(_ w: AccountWorld, _ sql: SQL) async throws -> Int64 {
        try await w.service.database.read { try $0.scalar(sql) ?? 0 }
    }

    @Test func aSuspensionHidesTheUsersNotificationsAndLiftingItRestoresThemExactly() async throws {
        let w = try await AccountWorld.make(accountBatch: 2)
        defer { w.stop() }
        let subject = try await w.service.key(w.subject)
        let views = try await Self.views(w)
        let stored = try await Self.stored(w)
        let own = try await AccountChecks.view(w.subject, in: w.service)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM all_notifications WHERE actor = \(subject)") >= 8)

        try await w.service.setState(w.subject, .suspended, version: 1)
        let hold = try await w.service.runAccountJobs()
        #expect(hold.count > 3 && hold.allSatisfy { $0.kind == .hide } && hold.last?.done == true)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM all_notifications WHERE actor = \(subject)") == 0)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM held_notifications WHERE actor = \(subject)") >= 8)
        for user in w.others {
            let view = try await AccountChecks.view(user, in: w.service)
            #expect(!view.flat.contains { $0.actorId == w.subject.id }, "\(user.username)")
            #expect(!view.groups.contains { $0.actorIds.contains(w.subject.id) }, "\(user.username)")
            try await AccountChecks.expectConsistent(user, in: w.service)
        }
        // Alice's unread notifications by the subject left her badge.
        #expect(try await AccountChecks.view(w.alice, in: w.service).unread < views["alice"]!.unread)
        #expect(try await AccountChecks.view(w.subject, in: w.service) == own)
        #expect(try await Self.orphanPushes(w) == 0)

        try await w.service.setState(w.subject, .active, version: 2)
        let restore = try await w.service.runAccountJobs()
        #expect(restore.count > 3 && restore.allSatisfy { $0.kind == .restore } && restore.last?.done == true)
        #expect(try await Self.views(w) == views)
        #expect(try await Self.stored(w) == stored)
        #expect(try await AccountChecks.view(w.subject, in: w.service) == own)
        #expect(try await AccountChecks.recentNotNewer(in: w.service.database) == 0)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM held_notifications") == 0)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM held_groups") == 0)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM account_jobs") == 0)
    }

    /// While the subject is suspended it is as unknown to others: its header, lists, follows,
    /// blocks, mutes and requests answer 404; it leaves the others' lists but their counts stay;
    /// nothing new is notified to or by it and its new post's fan-out waits. Lifting it brings all
    /// of it back, and the fan-out runs.
    @Test func aSuspendedUserIsUnknownToOthersAndComesBack() async throws {
        let w = try await AccountWorld.make(accountBatch: 50)
        defer { w.stop() }
        let s = w.service
        let aliceHeader = try await s.header(w.carol, w.alice.username)
        let aliceFollowers = try await s.edges(w.carol, w.alice.username).items.map(\.userId)
        #expect(aliceFollowers.contains(w.subject.id))
        try await s.setState(w.subject, .suspended, version: 1)
        try await s.runAccountJobs()

        func expect404(_ what: String, _ body: () async throws -> Void) async {
            let error = await #expect(throws: ServiceError.self, "\(what)") { try await body() }
            #expect(error?.status == 404, "\(what)")
        }
        await expect404("header") { _ = try await s.header(w.alice, w.subject.username) }
        await expect404("followers") { _ = try await s.edges(w.alice, w.subject.username) }
        await expect404("follow") { _ = try await s.follow(w.carol, w.subject.username) }
        await expect404("unfollow") { _ = try await s.unfollow(w.alice, w.subject.username) }
        await expect404("name") { _ = try await s.app.graph.user(named: w.subject.username) }
        await expect404("block") { try await w.block(w.carol, w.subject) }
        await expect404("mute") { try await w.mute(w.carol, w.subject) }
        await expect404("answer") {
            try await s.app.graph.safety.answer(
                user: UserRef(id: w.pat.id, username: w.pat.username),
                requester: UserRef(id: w.subject.id, username: w.subject.username), accept: true, nowMs: 1)
        }
        // Its follows stay and count; the lists leave it out.
        #expect(try await s.header(w.carol, w.alice.username) == aliceHeader)
        #expect(try await s.edges(w.carol, w.alice.username).items.map(\.userId) == aliceFollowers.filter { $0 != w.subject.id })
        let safety = s.app.graph.safety
        #expect(try await safety.list(.followRequests, userId: w.pat.id, page: .init()).items.map(\.userId) == [w.dave.id])
        #expect(try await safety.list(.blocks, userId: w.frank.id, page: .init()).items.isEmpty)
        #expect(try await safety.list(.mutes, userId: w.alice.id, page: .init()).items.isEmpty)
        // Nothing new to or by it; its new post waits, alice's reaches nobody hidden.
        let aliceBefore = try await AccountChecks.view(w.alice, in: s)
        let subjectBefore = try await AccountChecks.view(w.subject, in: s)
        try await w.feed.like(w.subject, w.carol, post: "pc1")
        try await w.feed.like(w.carol, w.subject, post: "pu1")
        try await w.post("pu9", by: w.subject, tagging: [w.carol])
        try await w.post("pa9", by: w.alice)
        #expect(try await AccountChecks.view(w.subject, in: s) == subjectBefore)
        #expect(try await AccountChecks.view(w.alice, in: s) == aliceBefore)
        #expect(try await s.allNotifications(w.carol).isEmpty)
        #expect(try await s.app.jobs.step() == false)  // the subject's fan-out waits
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM fanout_jobs") == 1)

        try await s.setState(w.subject, .active, version: 2)
        try await s.runAccountJobs()
        #expect(try await s.header(w.alice, w.subject.username).followState == .following)
        #expect(try await s.edges(w.carol, w.alice.username).items.map(\.userId) == aliceFollowers)
        #expect(try await safety.list(.followRequests, userId: w.pat.id, page: .init()).items.count == 2)
        #expect(try await s.app.jobs.step() == true)  // the fan-out goes on
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM fanout_jobs") == 0)
        let posts = try await s.allNotifications(w.bob).filter { $0.type == .post && $0.post?.id == "pu9" }
        #expect(posts.count == 1)
        for user in w.others { try await AccountChecks.expectConsistent(user, in: s) }
    }

    /// What happens to a held notification while it is held happens to it for good: an unlike
    /// removes it, a deleted post takes its notifications, a read mark that passes it makes it
    /// come back read.
    @Test func aHeldNotificationFollowsWhatHappensWhileItIsHeld() async throws {
        let w = try await AccountWorld.make(accountBatch: 4)
        defer { w.stop() }
        let s = w.service
        try await s.setState(w.subject, .suspended, version: 1)
        try await s.runAccountJobs()
        try await w.feed.emit(Profile.PostUnliked(postId: "pb1", ownerId: w.bob.id, userId: w.subject.id))
        try await w.feed.emit(Profile.PostDeleted(postId: "pa1", ownerId: w.alice.id))
        let head = try await s.since(w.alice, after: 0).headSeq
        _ = try await s.markRead(w.alice, upTo: head)
        try await s.setState(w.subject, .active, version: 2)
        try await s.runAccountJobs()
        let bob = try await s.allNotifications(w.bob)
        #expect(!bob.contains { $0.type == .like && $0.actorId == w.subject.id })
        let alice = try await s.allNotifications(w.alice)
        #expect(!alice.contains { $0.post?.id == "pa1" })
        let back = alice.filter { $0.actorId == w.subject.id }
        #expect(Set(back.map(\.type)) == [.follow, .tag, .post])
        #expect(back.allSatisfy { $0.read })
        for user in w.others { try await AccountChecks.expectConsistent(user, in: s) }
        #expect(try await AccountChecks.view(w.alice, in: s).unread == 0)
    }

    /// The gateway's `notification.apply_account_state` and AuthService's event bring the same
    /// state: whichever comes second with a version not newer changes nothing.
    @Test func aStateNoNewerThanTheStoredOneChangesNothing() async throws {
        let w = try await AccountWorld.make(accountBatch: 50)
        defer { w.stop() }
        let s = w.service
        let auth = try await AuthFeed(into: s)
        defer { auth.stop() }
        let at = Timestamp.now()
        try await s.setState(w.subject, .suspended, version: 2)
        try await auth.emit(Auth.AccountStateChanged(userId: w.subject.id, state: .suspended, version: 2, at: at))
        try await auth.emit(Auth.AccountStateChanged(userId: w.subject.id, state: .active, version: 1, at: at))
        let jobs = try await s.runAccountJobs()
        #expect(jobs.map(\.kind) == [.hide])
        await #expect(throws: ServiceError.self) { _ = try await s.header(w.alice, w.subject.username) }
        try await auth.emit(Auth.AccountStateChanged(userId: w.subject.id, state: .active, version: 3, at: at))
        try await s.setState(w.subject, .active, version: 3)
        try await s.setState(w.subject, .suspended, version: 3)
        #expect(try await s.runAccountJobs().map(\.kind) == [.restore])
        #expect(try await s.header(w.alice, w.subject.username).followState == .following)
    }

    /// A deletion hides the same way but keeps nothing aside (it is never undone), and the pushes
    /// the user's actions queued are dropped.
    @Test func deletingRemovesTheUsersNotificationsToOthersAndTheirPushes() async throws {
        let w = try await AccountWorld.make(accountBatch: 3)
        defer { w.stop() }
        let s = w.service
        let subject = try await s.key(w.subject)
        let pushes: SQL = """
            SELECT COUNT(*) FROM push_queue q JOIN all_notifications n ON n.recipient = q.recipient AND n.seq = q.seq
            WHERE n.actor = \(subject)
            """
        #expect(try await Self.count(w, pushes) > 0)
        try await s.setState(w.subject, .deleting, version: 1)
        let jobs = try await s.runAccountJobs()
        #expect(jobs.allSatisfy { $0.kind == .remove } && jobs.count > 1)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM all_notifications WHERE actor = \(subject)") == 0)
        #expect(try await Self.count(w, "SELECT COUNT(*) FROM held_notifications") == 0)
        #expect(try await Self.orphanPushes(w) == 0)
        for user in w.others { try await AccountChecks.expectConsistent(user, in: s) }
        #expect(try await AccountChecks.countMismatches(in: s.database) == 0)
    }
}
