import Foundation
import Harness
import Messages
import Storage
import TestSupport
import Testing
import Wire

@testable import NotificationService

/// Grouped notifications and the badge on a temporary database (either engine), through the
/// writer, removal paths and stores the service uses: groups kept on write, pages in position
/// order without repeats or skips while writes arrive, and the flat list, the groups and the
/// badge agreeing after every kind of removal.
struct NotificationGroupTests {
    let database: Database
    let store: SQLNotificationStore
    let follows: SQLFollowStore
    let writer = NotificationWriter(delivery: .none)
    static let owner = "u-owner"
    /// 2026-01-01T12:00:00Z in Unix ms: the clock of these tests, moved only through `createdAt`.
    static let noon: Int64 = 1_767_268_800_000

    init() throws {
        database = try TestDatabase.make()
        store = SQLNotificationStore(database: database)
        follows = SQLFollowStore(database: database, notifications: writer)
    }

    /// Stores a notification of `type` by `actor` for the owner. - Returns: its seq (nil: none stored).
    @discardableResult
    func add(
        _ type: NotificationType, by actor: String, post: String? = nil, detail: String? = nil, comment: String? = nil,
        at time: Int64 = noon, to recipient: String = owner
    ) async throws -> Int64? {
        let writer = self.writer
        return try await database.write { tx in
            try writer.insert(
                NewNotification(
                    recipientId: recipient, actorId: actor, type: type, commentId: comment, detail: detail,
                    post: post.map { .init(id: $0, thumbnailURL: "https://img.example/\($0).jpg") }, createdAt: time),
                in: tx)?.seq
        }
    }

    func like(_ actor: String, _ post: String, detail: String = "photo") async throws {
        try await add(.like, by: actor, post: post, detail: detail)
    }

    /// Every group, paging `pageSize` at a time.
    func allGroups(_ recipient: String = owner, pageSize: Int = 100) async throws -> [Notifications.Group] {
        var groups: [Notifications.Group] = []
        var cursor: String? = nil
        repeat {
            let page = try await store.groups(recipientId: recipient, page: .init(limit: pageSize, cursor: cursor))
            groups += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return groups
    }

    func allFlat(_ recipient: String = owner) async throws -> [Notifications.Notification] {
        var items: [Notifications.Notification] = []
        var cursor: String? = nil
        repeat {
            let page = try await store.list(recipientId: recipient, page: .init(limit: 100, cursor: cursor))
            items += page.items
            cursor = page.nextCursor
        } while cursor != nil
        return items
    }

    /// The groups, the flat list and the badge agree: each group's count is its members in the
    /// flat list, its actors the 3 newest distinct ones, its latest seq the newest member's; the
    /// badge is the flat list's unread rows, the same in all three answers.
    func expectConsistent(_ recipient: String = owner, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let flat = try await allFlat(recipient)
        let groups = try await allGroups(recipient, pageSize: 7)
        var members: [String: [Notifications.Notification]] = [:]
        for n in flat { members[NotificationGroupKey.of(n), default: []].append(n) }
        #expect(Set(groups.map(\.key)) == Set(members.keys), sourceLocation: sourceLocation)
        #expect(groups.count == Set(groups.map(\.key)).count, "a group repeated", sourceLocation: sourceLocation)
        for g in groups {
            let m = members[g.key] ?? []
            var actors: [String] = []
            for n in m where !actors.contains(n.actorId) && actors.count < 3 { actors.append(n.actorId) }
            #expect(g.count == m.count, "\(g.key)", sourceLocation: sourceLocation)
            #expect(g.actorIds == actors, "\(g.key)", sourceLocation: sourceLocation)
            #expect(g.latestSeq == m.first?.seq, "\(g.key)", sourceLocation: sourceLocation)
        }
        let unread = flat.filter { !$0.read }.count
        #expect(try await store.unreadCount(recipientId: recipient) == unread, sourceLocation: sourceLocation)
        #expect(
            try await store.list(recipientId: recipient, page: .init()).unreadCount == unread, sourceLocation: sourceLocation)
        #expect(
            try await store.groups(recipientId: recipient, page: .init()).unreadCount == unread,
            sourceLocation: sourceLocation)
    }

    @Test func aThousandLikersOnOnePostAreOneGroupWithTheThreeNewestActors() async throws {
        let writer = self.writer
        try await database.write { tx in
            for i in 0..<1_000 {
                try writer.insert(
                    NewNotification(
                        recipientId: Self.owner, actorId: "u-liker\(i)", type: .like, detail: "video",
                        post: .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"), createdAt: Self.noon + Int64(i)),
                    in: tx)
            }
        }
        let page = try await store.groups(recipientId: Self.owner, page: .init(limit: 20))
        #expect(page.items.count == 1 && page.nextCursor == nil && page.unreadCount == 1_000)
        let g = try #require(page.items.first)
        #expect(g.key == "like:p1" && g.type == .like && g.count == 1_000 && g.detail == "video")
        #expect(g.actorIds == ["u-liker999", "u-liker998", "u-liker997"])
        #expect(g.post == .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"))
        #expect(g.latestSeq == 1_000 && g.latestAt == Timestamp.format(ms: Self.noon + 999) && !g.read && g.followState == nil)
        #expect(
            NotificationText.renderGroup(type: g.type, usernames: ["carol", "bob", "alice"], count: g.count, detail: g.detail)
                == "carol, bob and 998 others liked your video.")
    }

    @Test func followsAcrossTwoUTCDaysAreTwoGroups() async throws {
        let day = NotificationGroups.msPerDay
        let owner = UserRef(id: Self.owner, username: "owner")
        for (i, time) in [Self.noon, Self.noon + 1_000, Self.noon + day / 2 - 1, Self.noon + day / 2].enumerated() {
            _ = try await follows.follow(
                follower: UserRef(id: "u-fan\(i)", username: "fan\(i)"), followee: owner, notifyPosts: nil, nowMs: time)
        }
        let groups = try await allGroups()
        #expect(groups.map(\.key) == ["follow:2026-01-02", "follow:2026-01-01"])
        #expect(groups.map(\.count) == [1, 3])
        #expect(groups[0].actorIds == ["u-fan3"] && groups[1].actorIds == ["u-fan2", "u-fan1", "u-fan0"])
        // A group of one follow carries the follow state; a larger one does not.
        #expect(groups[0].followState == .notFollowing && groups[1].followState == nil)
        _ = try await follows.follow(
            follower: owner, followee: UserRef(id: "u-fan3", username: "fan3"), notifyPosts: nil, nowMs: Self.noon)
        #expect(try await allGroups().first?.followState == .following)
        try await expectConsistent()
    }

    @Test func mixedKindsPageInOrderOfNewestActivity() async throws {
        try await like("u-a", "p1")  // 1
        try await add(.follow, by: "u-b")  // 2
        try await add(.tag, by: "u-c", post: "p9")  // 3
        try await add(.comment, by: "u-d", post: "p1", detail: "nice", comment: "c1")  // 4
        try await add(.post, by: "u-e", post: "p8")  // 5
        try await like("u-f", "p2")  // 6
        try await add(.comment, by: "u-d", post: "p1", detail: "again", comment: "c2")  // 7: the same actor
        try await like("u-g", "p1")  // 8: p1's likes move to the top
        let groups = try await allGroups(pageSize: 2)
        #expect(groups.map(\.type.wire) == ["like", "comment", "like", "post", "tag", "follow"])
        #expect(groups.map(\.latestSeq) == [8, 7, 6, 5, 3, 2])
        #expect(groups[0].key == "like:p1" && groups[0].count == 2 && groups[0].actorIds == ["u-g", "u-a"])
        #expect(groups[1].key == "comment:p1" && groups[1].count == 2 && groups[1].actorIds == ["u-d"])
        #expect(groups[3].key.hasPrefix("post:") && groups[3].count == 1 && groups[3].post?.id == "p8")
        #expect(groups[4].key.hasPrefix("tag:") && groups[4].actorIds == ["u-c"])
        // Each flat notification's group key is its group's.
        let flat = try await allFlat()
        let keys = Set(groups.map(\.key))
        #expect(flat.allSatisfy { keys.contains(NotificationGroupKey.of($0)) })
        try await expectConsistent()
    }

    @Test func readMarksAndReadAll() async throws {
        for i in 0..<5 { try await like("u-\(i)", "p\(i % 2)") }  // p0: 1, 3, 5; p1: 2, 4
        #expect(try await store.unreadCount(recipientId: Self.owner) == 5)
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: 4) == 1)
        var groups = try await allGroups()
        #expect(groups.map(\.key) == ["like:p0", "like:p1"] && groups.map(\.read) == [false, true])
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: 2) == 1)  // never back
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: nil) == 0)  // all
        groups = try await allGroups()
        #expect(groups.allSatisfy { $0.read })
        try await like("u-9", "p1")
        #expect(try await store.unreadCount(recipientId: Self.owner) == 1)
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: 1_000) == 0)  // never past the head
        try await like("u-10", "p1")
        #expect(try await store.unreadCount(recipientId: Self.owner) == 1)
        try await expectConsistent()
    }

    @Test func unlikeUnfollowDeletionAndRetentionLeaveNoTrace() async throws {
        for i in 0..<5 { try await like("u-\(i)", "p1") }  // 1...5
        try await like("u-0", "p2")  // 6
        _ = try await follows.follow(
            follower: UserRef(id: "u-fan", username: "fan"), followee: UserRef(id: Self.owner, username: "owner"),
            notifyPosts: nil, nowMs: Self.noon)  // 7
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: 2) == 5)

        // Unlike by the newest actor: the group's actors and latest seq are read again.
        try await database.write { tx in
            try NotificationWriter.removeLike(recipientId: Self.owner, actorId: "u-4", postId: "p1", in: tx)
        }
        var p1 = try #require(try await allGroups().first { $0.key == "like:p1" })
        #expect(p1.count == 4 && p1.actorIds == ["u-3", "u-2", "u-1"] && p1.latestSeq == 4)
        #expect(try await store.unreadCount(recipientId: Self.owner) == 4)
        try await expectConsistent()
        // Liking again notifies again (API.md's undo/redo): a new seq, first in the group again.
        #expect(try await add(.like, by: "u-4", post: "p1", detail: "photo") == 8)
        p1 = try #require(try await allGroups().first { $0.key == "like:p1" })
        #expect(p1.count == 5 && p1.actorIds == ["u-4", "u-3", "u-2"] && p1.latestSeq == 8)
        #expect(try await store.unreadCount(recipientId: Self.owner) == 5)
        try await expectConsistent()
        // And unliking again takes it out again.
        try await database.write { tx in
            try NotificationWriter.removeLike(recipientId: Self.owner, actorId: "u-4", postId: "p1", in: tx)
        }
        p1 = try #require(try await allGroups().first { $0.key == "like:p1" })
        #expect(p1.count == 4 && p1.actorIds == ["u-3", "u-2", "u-1"] && p1.latestSeq == 4)
        #expect(try await store.unreadCount(recipientId: Self.owner) == 4)
        // Unlike of a read one: the badge does not move.
        try await database.write { tx in
            try NotificationWriter.removeLike(recipientId: Self.owner, actorId: "u-0", postId: "p1", in: tx)
        }
        p1 = try #require(try await allGroups().first { $0.key == "like:p1" })
        #expect(p1.count == 3 && p1.actorIds == ["u-3", "u-2", "u-1"])
        #expect(try await store.unreadCount(recipientId: Self.owner) == 4)
        try await expectConsistent()

        // Unfollow: the follow group goes.
        try await follows.unfollow(followerId: "u-fan", followeeId: Self.owner)
        #expect(try await allGroups().contains { $0.type == .follow } == false)
        #expect(try await store.unreadCount(recipientId: Self.owner) == 3)
        try await expectConsistent()

        // The post's deletion: its group goes; seqs are never reused.
        try await database.write { tx in
            guard let post = try Keys.existingPost("p1", on: tx.connection) else { return }
            _ = try NotificationWriter.delete(aboutPost: post, limit: 100, in: tx)
        }
        #expect(try await allGroups().map(\.key) == ["like:p2"])
        #expect(try await store.unreadCount(recipientId: Self.owner) == 1)
        try await expectConsistent()
        #expect(try await add(.like, by: "u-5", post: "p2", detail: "photo") == 9)
        #expect(try await store.unreadCount(recipientId: Self.owner) == 2)

        // Read all: the tombstones of removed unread rows are forgotten with it.
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: nil) == 0)
        try await like("u-6", "p2")
        #expect(try await store.unreadCount(recipientId: Self.owner) == 1)
        try await expectConsistent()
    }

    @Test func retentionKeepsGroupsConsistentWithTheFlatList() async throws {
        for i in 0..<12 { try await like("u-\(i)", "p\(i % 3)") }
        try await add(.tag, by: "u-t", post: "p9")
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: 3) == 10)
        _ = try await RecentMerger(database: database, intervalMs: 1_000, batch: 100, logger: InProcessService.logger).pass()
        let pruner = RetentionPruner(
            database: database, policy: RetentionPolicy(maxAgeMs: 90 * NotificationGroups.msPerDay, count: 5),
            intervalMs: 1_000, logger: InProcessService.logger, now: { Self.noon })
        #expect(try await pruner.sweep() == 8)
        #expect(try await allFlat().map(\.seq) == [13, 12, 11, 10, 9])
        #expect(try await allGroups().map(\.count) == [1, 2, 1, 1])
        try await expectConsistent()
        try await like("u-new", "p0")
        try await expectConsistent()
    }

    @Test func pagingWhileNotificationsArriveNeitherRepeatsNorSkips() async throws {
        for i in 0..<30 { try await like("u-a", "p\(i)") }  // 30 groups, p29 newest
        var seen: [String] = []
        var page = try await store.groups(recipientId: Self.owner, page: .init(limit: 5))
        seen += page.items.map(\.key)
        var round = 0
        while let cursor = page.nextCursor {
            // Another client writes between pages: groups already shown and groups still to
            // come move to the top, and a new group appears.
            try await like("u-b\(round)", "p\(29 - round * 3)")
            try await like("u-c\(round)", "p\(round * 2)")
            try await like("u-d", "new\(round)")
            try await like("u-e\(round)", "p\(10 + round)")
            page = try await store.groups(recipientId: Self.owner, page: .init(limit: 5, cursor: cursor))
            seen += page.items.map(\.key)
            round += 1
        }
        #expect(seen.count == Set(seen).count, "repeated: \(seen)")
        #expect(Set(seen) == Set((0..<30).map { "like:p\($0)" }))
        // A new pass sees everything, new groups first.
        let fresh = try await allGroups(pageSize: 4)
        #expect(fresh.count == 30 + round)
        try await expectConsistent()
    }

    /// A database of the schema before groups (notification.1...11) with notifications in both
    /// tables, a deleted seq below and at the head, and a read mark, opened with today's
    /// migrations: its groups and its badge are filled from the rows, once.
    @Test func theMigrationFillsGroupsAndTheBadgeFromExistingRows() async throws {
        let directory = makeTemporaryDirectory("notification-groups-migration")
        let old = try Database(
            location: try TestStorage.location(directory, "notification"), producer: "notification",
            migrations: Array(NotificationSchema.migrations.prefix { $0.id != "notification.12-groups-and-badge" }),
            legacy: NotificationSchema.legacy)
        let day = Self.noon / NotificationGroups.msPerDay * NotificationGroups.msPerDay
        try await old.write { tx in
            let c = tx.connection
            var keys: [String: Int64] = [:]
            for id in ["u-owner", "u-a", "u-b", "u-c", "u-d"] {
                keys[id] = try c.insertReturning(
                    "INSERT INTO identities(id, username, version) VALUES (\(id), \(id), 1) RETURNING key")
            }
            let p1 = try c.insertReturning(
                "INSERT INTO posts(id, thumbnail_url) VALUES ('p1', 'https://img.example/p1.jpg') RETURNING key")
            let p9 = try c.insertReturning(
                "INSERT INTO posts(id, thumbnail_url) VALUES ('p9', 'https://img.example/p9.jpg') RETURNING key")
            let owner = keys["u-owner"]!
            // seq, table, type, actor, post, once, detail, created_at; seqs 3 and 8 were deleted.
            let rows: [(Int64, String, Int64, String, Int64?, Int64?, String?, Int64)] = [
                (1, "notifications", 1, "u-a", p1, p1, "photo", day + 1),
                (2, "notifications", 2, "u-b", nil, 0, nil, day + 2),
                (4, "notifications", 1, "u-c", p1, p1, "video", day + 4),
                (5, "notifications", 4, "u-d", p9, p9, nil, day + 5),
                (6, "recent_notifications", 2, "u-c", nil, 0, nil, day + NotificationGroups.msPerDay),
                (7, "recent_notifications", 1, "u-d", p1, p1, "photo", day + NotificationGroups.msPerDay + 1),
            ]
            for r in rows {
                try tx.query(
                    """
                    INSERT INTO \(unescaped: r.1)(recipient, seq, type, actor, post, once, detail, created_at)
                        VALUES (\(owner), \(r.0), \(r.2), \(keys[r.3]!), \(r.4), \(r.5), \(r.6), \(r.7))
                    """
                )
            }
            try tx.query(
                "INSERT INTO recipients(recipient, read_seq, head_floor, merged_head) VALUES (\(owner), 1, 8, 5)")
        }
        let database = try TestDatabase.open(in: directory)
        let store = SQLNotificationStore(database: database)
        #expect(try await store.unreadCount(recipientId: Self.owner) == 5)
        let page = try await store.groups(recipientId: Self.owner, page: .init())
        #expect(page.unreadCount == 5)
        #expect(
            page.items.map(\.key).map { $0.hasPrefix("tag:") ? "tag" : $0 } == [
                "like:p1", "follow:2026-01-02", "tag", "follow:2026-01-01",
            ])
        #expect(page.items.map(\.count) == [3, 1, 1, 1])
        #expect(page.items[0].actorIds == ["u-d", "u-c", "u-a"] && page.items[0].latestSeq == 7)
        #expect(page.items[0].latestAt == Timestamp.format(ms: day + NotificationGroups.msPerDay + 1))
        #expect(page.items.map(\.read) == [false, false, false, false])
        // The service goes on from there: the next seq, the group, the badge.
        let writer = self.writer
        _ = try await database.write { tx in
            try writer.insert(
                NewNotification(
                    recipientId: Self.owner, actorId: "u-e", type: .like, detail: "photo",
                    post: .init(id: "p1", thumbnailURL: "https://img.example/p1.jpg"), createdAt: Self.noon),
                in: tx)
        }
        #expect(try await store.groups(recipientId: Self.owner, page: .init()).items.first?.latestSeq == 9)
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: 8) == 1)
        #expect(try await store.markRead(recipientId: Self.owner, upToSeq: nil) == 0)
    }

    @Test func groupTexts() {
        func text(_ type: NotificationKind, _ names: [String], _ count: Int, _ detail: String? = nil) -> String {
            NotificationText.renderGroup(type: type, usernames: names, count: count, detail: detail)
        }
        #expect(text(.like, ["alice"], 1, "photo") == "alice liked your photo.")
        #expect(text(.like, ["alice", "bob"], 2, "video") == "alice and bob liked your video.")
        #expect(text(.like, ["alice", "bob", "carol"], 3) == "alice, bob and 1 other liked your photo.")
        #expect(text(.like, ["alice", "bob", "carol"], 14) == "alice, bob and 12 others liked your photo.")
        #expect(text(.comment, ["alice", "bob"], 2) == "alice and bob commented on your photo.")
        // A comment group counts comments: one person's three comments name that person alone.
        #expect(text(.comment, ["alice"], 3) == "alice commented on your photo.")
        #expect(text(.comment, ["alice", "bob"], 5) == "alice and bob commented on your photo.")
        #expect(text(.follow, ["alice", "bob", "carol"], 3) == "alice, bob and 1 other started following you.")
        #expect(text(.tag, ["alice"], 1) == "alice tagged you in a post.")
        #expect(text(.post, ["alice"], 1) == "alice shared a new post.")
    }
}
