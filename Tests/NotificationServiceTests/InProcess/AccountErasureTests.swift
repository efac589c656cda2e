import Foundation
import Harness
import Messages
import Storage
import Support
import Testing
import Wire

@testable import NotificationService

/// An erased account in NotificationService (step 3 of the deletion saga on `Auth`: on
/// `profile.account.erased` everything of the user goes, in batches, then
/// `notification.account.erased`), on the engine `TEST_STORAGE_ENGINE` names, over
/// `AccountWorld`, the worker run one batch at a time.
@Suite(.serialized)
struct AccountErasureTests {
    /// Marks the subject erased through ProfileService's event, as the saga does.
    static func erase(_ w: AccountWorld) async throws {
        try await w.feed.emit(Profile.AccountErased(userId: w.subject.id))
    }

    /// The events of the erasure in the service's outbox.
    static func erasedEvents(_ w: AccountWorld) async throws -> [Notifications.AccountErased] {
        try await w.service.database.outbox(after: 0, limit: 100_000).events.filter {
            $0.type == Notifications.AccountErased.type
        }.map { try WireJSON.decode(EventEnvelope<Notifications.AccountErased>.self, from: $0.envelope).body }
    }

    /// Nothing of the subject is left, every other user's counts, groups and badges agree with
    /// their rows, and the erasure was announced once.
    static func expectErased(_ w: AccountWorld, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let subject = try await w.service.key(w.subject)
        #expect(
            try await AccountChecks.rows(referringTo: subject, in: w.service.database) == [:], sourceLocation: sourceLocation)
        #expect(try await AccountChecks.countMismatches(in: w.service.database) == 0, sourceLocation: sourceLocation)
        for user in w.others { try await AccountChecks.expectConsistent(user, in: w.service, sourceLocation: sourceLocation) }
        #expect(
            try await erasedEvents(w) == [Notifications.AccountErased(userId: w.subject.id)], sourceLocation: sourceLocation)
        #expect(
            try await w.service.database.read { try AccountStates.state(subject, on: $0) } == .erased,
            sourceLocation: sourceLocation)
        // The identity replica's row is gone too: only the tombstone knows the id.
        let id = w.subject.id
        #expect(
            try await w.service.database.read { c in try c.scalar("SELECT COUNT(*) FROM identities WHERE id = \(id)") } == 0,
            sourceLocation: sourceLocation)
    }

    /// Erased straight away, or after a suspension (its notifications held) and the deletion's
    /// start, as the saga goes: either way nothing of the user remains.
    @Test(arguments: [false, true])
    func anErasureLeavesNothingOfTheUser(suspendedFirst: Bool) async throws {
        let w = try await AccountWorld.make(accountBatch: 3)
        defer { w.stop() }
        let subject = try await w.service.key(w.subject)
        let before = try await AccountChecks.rows(referringTo: subject, in: w.service.database)
        for table in [
            "edges", "follow_counts", "follow_requests", "blocks", "mutes", "private_accounts", "recent_notifications",
            "notifications", "notification_groups", "removed_unread", "recipients", "push_suppressed", "push_queue",
            "devices", "device_sessions", "push_preferences", "actor_profiles", "posts", "identities.username",
        ] {
            #expect(before[table, default: 0] > 0, "the world has \(table) of the subject")
        }
        if suspendedFirst {
            try await w.service.setState(w.subject, .suspended, version: 1)
            try await w.service.runAccountJobs()
            #expect(try await AccountChecks.rows(referringTo: subject, in: w.service.database)["held_notifications"] ?? 0 > 0)
            try await w.service.setState(w.subject, .deleting, version: 2)
            try await w.service.runAccountJobs()
        }
        try await Self.erase(w)
        #expect(try await Self.erasedEvents(w).isEmpty)
        let batches = try await w.service.runAccountJobs()
        #expect(batches.count > 5 && batches.allSatisfy { $0.kind == .erase && $0.rows <= 3 + 5 })
        #expect(batches.last?.done == true && batches.dropLast().allSatisfy { !$0.done })
        try await Self.expectErased(w)
        // The graph's counts of the others: alice and bob lost a follower... and a followee.
        #expect(try await AccountChecks.counts(try await w.service.key(w.alice), in: w.service.database) == (1, 0))
        #expect(try await AccountChecks.counts(try await w.service.key(w.bob), in: w.service.database) == (1, 0))
        #expect(try await AccountChecks.counts(try await w.service.key(w.carol), in: w.service.database) == (0, 1))
    }

    /// Every other user's rows are as they were, except what the user's rows changed: the counts
    /// of the users it followed or that followed it, and the groups, badges (tombstones of unread
    /// rows removed) and seq floors of the recipients of its notifications.
    @Test func everyOtherUsersDataIsUntouchedExceptTheCorrectedCounts() async throws {
        let w = try await AccountWorld.make(accountBatch: 4)
        defer { w.stop() }
        let db = w.service.database
        let subject = try await w.service.key(w.subject)
        let untouched = [
            "edges", "follow_requests", "blocks", "mutes", "private_accounts", "recent_notifications", "notifications",
            "held_notifications", "push_suppressed", "push_queue", "devices", "device_sessions", "device_moves",
            "push_preferences", "actor_profiles", "posts", "fanout_jobs",
        ]
        var rows: [String: [String]] = [:]
        for table in untouched { rows[table] = try await AccountChecks.rows(of: table, notReferringTo: subject, in: db) }
        let others = try await w.service.database.read { c in
            try c.query("SELECT key, id, username, version FROM identities WHERE key <> \(subject) ORDER BY key").map {
                "\($0.values)"
            }
        }
        // What the subject's rows will change: its edges' other ends, its notifications' groups
        // and recipients.
        let (followers, followees, touchedGroups, recipients) = try await db.read { c in
            (
                Set(try c.query("SELECT follower FROM edges WHERE followee = \(subject)").map { try $0.int64("follower") }),
                Set(try c.query("SELECT followee FROM edges WHERE follower = \(subject)").map { try $0.int64("followee") }),
                Set(
                    try c.query("SELECT recipient, type, grp FROM all_notifications WHERE actor = \(subject) AND grp IS NOT NULL")
                        .map { "\($0.values)" }),
                Set(
                    try c.query("SELECT recipient FROM all_notifications WHERE actor = \(subject)").map {
                        try $0.int64("recipient")
                    })
            )
        }
        let counts = try await Self.counts(db)
        let groups = try await Self.groups(db)
        let marks = try await db.read { c in
            try c.query("SELECT recipient, read_seq, head_floor, removed_unread FROM recipients").map { "\($0.values)" }
        }
        let tombstones = Set(try await db.read { c in try c.query("SELECT * FROM removed_unread").map { "\($0.values)" } })

        try await Self.erase(w)
        try await w.service.runAccountJobs()
        try await Self.expectErased(w)

        for table in untouched {
            #expect(try await AccountChecks.rows(of: table, notReferringTo: subject, in: db) == rows[table], "\(table)")
        }
        #expect(
            try await db.read { c in
                try c.query("SELECT key, id, username, version FROM identities WHERE key <> \(subject) ORDER BY key").map {
                    "\($0.values)"
                }
            } == others)
        // Counts: one follower less for each followee, one followee less for each follower.
        var expected = counts
        expected[subject] = nil
        for f in followers { expected[f]?.following -= 1 }
        for f in followees { expected[f]?.followers -= 1 }
        let after = try await Self.counts(db)
        #expect(after.keys.sorted() == expected.keys.sorted())
        for (user, count) in expected { #expect(after[user]! == count, "counts of \(user)") }
        // Groups without the subject's rows are as they were; the others agree with their rows.
        let groupsAfter = try await Self.groups(db)
        for (key, row) in groups where !touchedGroups.contains(key) && !Self.row(key, startsWith: subject) {
            #expect(groupsAfter[key] == row, "group \(key)")
        }
        // Read marks never move; seq floors and removed counts move only for the recipients of the
        // subject's notifications, and the tombstones only grow there.
        let marksAfter = try await db.read { c in
            try c.query("SELECT recipient, read_seq, head_floor, removed_unread FROM recipients").map { "\($0.values)" }
        }
        for mark in marks
        where !recipients.contains(where: { Self.row(mark, startsWith: $0) }) && !Self.row(mark, startsWith: subject) {
            #expect(marksAfter.contains(mark), "\(mark)")
        }
        let tombstonesAfter = Set(
            try await db.read { c in try c.query("SELECT * FROM removed_unread").map { "\($0.values)" } })
        for t in tombstones where !Self.row(t, startsWith: subject) { #expect(tombstonesAfter.contains(t), "\(t)") }
        for t in tombstonesAfter.subtracting(tombstones) {
            #expect(recipients.contains { Self.row(t, startsWith: $0) }, "\(t)")
        }
    }

    /// Whether `row` (a row's values as text, `"\(row.values)"`) starts with the key `key`.
    static func row(_ row: String, startsWith key: Int64) -> Bool {
        row.hasPrefix(String("\([SQLValue.int(key)])".dropLast()) + ",")
    }

    static func counts(_ db: Database) async throws -> [Int64: (followers: Int64, following: Int64)] {
        try await db.read { c in
            var counts: [Int64: (followers: Int64, following: Int64)] = [:]
            for r in try c.query("SELECT \"user\", followers, following FROM follow_counts") {
                counts[try r.int64("user")] = (try r.int64("followers"), try r.int64("following"))
            }
            return counts
        }
    }

    /// Every group, by its key's values as text.
    static func groups(_ db: Database) async throws -> [String: String] {
        try await db.read { c in
            var groups: [String: String] = [:]
            for r in try c.query("SELECT * FROM notification_groups") {
                groups["\(Array(r.values.prefix(3)))"] = "\(r.values)"
            }
            return groups
        }
    }

    /// Events about the erased user that arrive afterwards (a like, a comment, a post, a profile,
    /// a rename, a logout, a state) and requests naming it change nothing and recreate nothing.
    @Test func lateEventsAboutAnErasedUserChangeNothing() async throws {
        let w = try await AccountWorld.make(accountBatch: 50)
        defer { w.stop() }
        let s = w.service
        let auth = try await AuthFeed(into: s)
        defer { auth.stop() }
        try await Self.erase(w)
        try await s.runAccountJobs()
        try await Self.expectErased(w)
        let alice = try await AccountChecks.view(w.alice, in: s)

        try await w.feed.like(w.subject, w.alice, post: "pa1")
        try await w.feed.like(w.alice, w.subject, post: "pu1")
        try await w.comment(w.subject, on: w.alice, post: "pa1", id: "late")
        try await w.post("pu7", by: w.subject, tagging: [w.alice])
        try await w.feed.emit(Profile.ProfileChanged(user: w.profile(w.subject, isPrivate: true)))
        try await w.feed.emit(Profile.PostDeleted(postId: "pu1", ownerId: w.subject.id))
        try await w.feed.emit(Profile.AccountErased(userId: w.subject.id))
        let renamed = Identity(id: w.subject.id, username: "subject2", email: "", version: 9)
        try await auth.emit(Auth.IdentityChanged(identity: renamed))
        try await auth.emit(Auth.SessionRevoked(userId: w.subject.id, sessionIds: ["s-late"]))
        try await auth.emit(Auth.AccountStateChanged(userId: w.subject.id, state: .active, version: 99, at: Timestamp.now()))
        try await s.setState(w.subject, .active, version: 100)
        // A lookup of its old name at AuthService (which still knows it until its own step) finds
        // nobody here.
        await #expect(throws: ServiceError.self) { _ = try await s.follow(w.alice, w.subject.username) }
        await #expect(throws: ServiceError.self) {
            _ = try await s.app.devices.store.register(
                .init(userId: w.subject.id, sessionId: "s-new", token: testToken(9), environment: "sandbox"))
        }
        await #expect(throws: ServiceError.self) {
            _ = try await s.app.devices.store.updatePreferences(.init(userId: w.subject.id, like: true))
        }
        _ = try await s.markRead(w.subject, upTo: 100)
        #expect(try await s.runAccountJobs().isEmpty)

        let subject = try await s.key(w.subject)
        #expect(try await AccountChecks.rows(referringTo: subject, in: s.database) == [:])
        #expect(try await AccountChecks.view(w.alice, in: s) == alice)
        #expect(try await Self.erasedEvents(w).count == 1)
        #expect(try await s.database.read { try PushQueueStore.username(subject, on: $0) } == nil)
    }

    /// The erasure stops between any two batches (the process killed, another replica takes
    /// over: a new service on the same database) and in the middle of one (its transaction rolled
    /// back), and resumes where it stopped: the end is the same as without a stop, with the
    /// counts corrected once and the event emitted once.
    @Test func anInterruptedErasureResumesWhereItStopped() async throws {
        let w = try await AccountWorld.make(accountBatch: 2)
        defer { w.stop() }
        try await Self.erase(w)
        var batches = 0
        for _ in 0..<4 {
            #expect(try await w.service.app.accountWorker.step()?.done == false)
            batches += 1
        }
        // Another process on the same database, its worker in batches of 3.
        let restarted = try await InProcessService(accountBatch: 3, directory: w.service.directory)
        defer { restarted.stop() }
        let job = try #require(try await restarted.database.write { try AccountJobs.next(in: $0) })
        #expect(job.phase > 0 && job.userId == w.subject.id)
        struct Killed: Error {}
        // A batch killed halfway: nothing of it stays.
        let before = try await AccountChecks.rows(referringTo: job.user, in: restarted.database)
        await #expect(throws: Killed.self) {
            try await restarted.database.write { tx in
                _ = try AccountWorker.run(job, limit: 3, in: tx)
                throw Killed()
            }
        }
        #expect(try await AccountChecks.rows(referringTo: job.user, in: restarted.database) == before)
        while let outcome = try await restarted.app.accountWorker.step() {
            #expect(outcome.rows <= 3 + 5)
            batches += 1
        }
        #expect(batches > 10)
        try await Self.expectErased(w)
    }

    /// The running worker waits between an erasure's batches while
    /// `NOTIFICATION_TEST_ERASURE_HOLD_FILE` holds a number no greater than the batches it did
    /// (`TestHold`, as ProfileService's erasure does), and goes on to the end once it is removed.
    @Test func aTestHoldStopsTheErasureBetweenBatches() async throws {
        let w = try await AccountWorld.make(accountBatch: 2)
        defer { w.stop() }
        let file = w.service.directory + "/erasure-hold"
        try "2".write(toFile: file, atomically: true, encoding: .utf8)
        let worker = AccountWorker(
            database: w.service.database, batch: 2, logger: InProcessService.logger, hold: TestHold(path: file))
        try await Self.erase(w)
        let running = Task { await worker.run() }
        defer { running.cancel() }
        let subject = try await w.service.key(w.subject)
        let turns = { @Sendable () async throws -> Int64? in
            try await w.service.database.read { c in
                try c.scalar("SELECT turn FROM account_jobs WHERE user_key = \(subject)")
            }
        }
        /// Polls `condition` every 20 ms for up to 10 s.
        func waitUntil(_ condition: () async throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            while try await !condition() {
                guard ContinuousClock.now < deadline else { throw TestSupportError("timed out") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        try await waitUntil { try await turns() == 2 }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await turns() == 2, "held after two batches")
        #expect(try await Self.erasedEvents(w).isEmpty)
        try FileManager.default.removeItem(atPath: file)
        try await waitUntil { try await Self.erasedEvents(w).count == 1 }
        #expect(try await turns() == nil)
        try await Self.expectErased(w)
    }
}
