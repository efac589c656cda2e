import Foundation
import Messages
import Storage
import Testing
import Wire

@testable import NotificationService

/// `SQLFollowStore` on a temporary database: edges, counters, events, lists, states.
struct FollowStoreTests {
    let database: Database
    let store: SQLFollowStore

    init() throws {
        database = try TestDatabase.make()
        store = SQLFollowStore(database: database, notifications: NotificationWriter(delivery: .none))
    }

    static func user(_ name: String) -> UserRef { UserRef(id: "u-\(name)", username: name) }
    let alice = user("alice")
    let bob = user("bob")
    let carol = user("carol")

    @discardableResult
    func follow(_ a: UserRef, _ b: UserRef, notifyPosts: Bool? = nil) async throws -> Notifications.Follow.Reply {
        try await store.follow(follower: a, followee: b, notifyPosts: notifyPosts, nowMs: Timestamp.nowMs())
    }

    func changes() async throws -> [Notifications.FollowChanged] {
        try await database.outbox(after: 0, limit: 1_000).events.filter { $0.type == Notifications.FollowChanged.type }.map {
            try WireJSON.decode(EventEnvelope<Notifications.FollowChanged>.self, from: $0.envelope).body
        }
    }

    /// The header by name (one read, one snapshot) says what the header by id says.
    @Test func theHeaderByNameAgreesWithTheHeaderById() async throws {
        // Names as the identity replica stores them (follows alone store nameless identities).
        try await database.write { tx in
            for user in [alice, bob, carol] {
                try tx.query("INSERT INTO identities(id, username, version) VALUES (\(user.id), \(user.username), 1)")
            }
        }
        try await follow(alice, bob)
        try await follow(carol, bob)
        try await follow(bob, alice)
        for (name, id) in [("bob", bob.id), ("BOB", bob.id), ("alice", alice.id), ("carol", carol.id)] {
            for viewer in [alice.id, bob.id, carol.id, "u-nobody"] {
                let byName = try await store.header(username: name, viewerId: viewer)
                let byId = try await store.header(userId: id, viewerId: viewer)
                #expect(byName?.userId == byId.userId && byName?.followState == byId.followState, "\(name) \(viewer)")
                #expect(byName?.followers == byId.followers && byName?.following == byId.following, "\(name) \(viewer)")
            }
        }
        #expect(try await store.header(username: "bob", viewerId: alice.id)?.followState == .following)
        #expect(try await store.header(username: "bob", viewerId: alice.id)?.followers == 2)
        #expect(try await store.header(username: "nobody", viewerId: alice.id) == nil)
    }

    @Test func followAndUnfollowAreIdempotentAndCountersEqualTheEdges() async throws {
        #expect(try await follow(alice, bob) == .init(followState: .following, notifyPosts: false))
        #expect(try await follow(alice, bob) == .init(followState: .following, notifyPosts: false))
        #expect(try await follow(alice, bob, notifyPosts: true) == .init(followState: .following, notifyPosts: true))
        #expect(try await follow(alice, bob) == .init(followState: .following, notifyPosts: true))  // nil keeps it
        try await follow(carol, bob)
        #expect(
            try await store.header(userId: bob.id, viewerId: alice.id)
                == .init(userId: bob.id, followers: 2, following: 0, followState: .following))
        #expect(
            try await store.header(userId: alice.id, viewerId: bob.id)
                == .init(userId: alice.id, followers: 0, following: 1, followState: .notFollowing, followsYou: true))
        #expect(try await store.header(userId: bob.id, viewerId: bob.id).followState == .self)

        try await store.unfollow(followerId: alice.id, followeeId: bob.id)
        try await store.unfollow(followerId: alice.id, followeeId: bob.id)
        try await store.unfollow(followerId: bob.id, followeeId: alice.id)  // never followed: nothing moves
        #expect(try await store.header(userId: bob.id, viewerId: alice.id).followers == 1)
        #expect(try await store.header(userId: alice.id, viewerId: alice.id).following == 0)
        #expect(try await store.header(userId: alice.id, viewerId: alice.id).followers == 0)
        // Unknown users have zero counts, not an error (the handlers answer 404 for them).
        #expect(try await store.header(userId: "u-nobody", viewerId: alice.id).followers == 0)

        // notification.follow.changed only on a real change: follow, notifyPosts on, carol, unfollow.
        let changes = try await changes()
        #expect(changes.map(\.following) == [true, true, true, false])
        #expect(changes.map(\.notifyPosts) == [false, true, false, true])
        #expect(changes.last?.followerId == alice.id && changes.last?.followeeId == bob.id)
    }

    /// An unfollow removes the follow notification (no trace in the list, the groups or the
    /// badge); following again leaves exactly one (API.md's undo/redo rule).
    @Test func unfollowAndFollowAgainLeaveExactlyOneFollowNotification() async throws {
        try await follow(alice, bob)
        let notifications = SQLNotificationStore(database: database)
        #expect(try await notifications.list(recipientId: bob.id, page: .init()).items.map(\.seq) == [1])
        try await store.unfollow(followerId: alice.id, followeeId: bob.id)
        var list = try await notifications.list(recipientId: bob.id, page: .init())
        #expect(list.items.isEmpty && list.unreadCount == 0)
        #expect(try await notifications.groups(recipientId: bob.id, page: .init()).items.isEmpty)
        try await follow(alice, bob)
        try await follow(alice, bob, notifyPosts: true)
        list = try await notifications.list(recipientId: bob.id, page: .init())
        #expect(list.items.map(\.seq) == [2] && list.unreadCount == 1)
        let groups = try await notifications.groups(recipientId: bob.id, page: .init())
        #expect(groups.items.map(\.count) == [1] && groups.items.first?.actorIds == [alice.id])
        #expect(try await notifications.list(recipientId: alice.id, page: .init()).items.isEmpty)
    }

    @Test func fiftyConcurrentFollowUnfollowPairsLeaveExactCounts() async throws {
        let star = Self.user("star")
        let fans = (0..<50).map { Self.user("fan\($0)") }
        let store = self.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, fan) in fans.enumerated() {
                group.addTask {
                    for _ in 0..<3 {
                        _ = try await store.follow(follower: fan, followee: star, notifyPosts: nil, nowMs: Timestamp.nowMs())
                        try await store.unfollow(followerId: fan.id, followeeId: star.id)
                    }
                    if i % 2 == 0 {
                        _ = try await store.follow(follower: fan, followee: star, notifyPosts: nil, nowMs: Timestamp.nowMs())
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.header(userId: star.id, viewerId: star.id).followers == 25)
        for (i, fan) in fans.enumerated() {
            #expect(try await store.header(userId: fan.id, viewerId: fan.id).following == (i % 2 == 0 ? 1 : 0))
        }
        var seen: [String] = []
        var cursor: String? = nil
        repeat {
            let page = try await store.edges(
                userId: star.id, following: false, viewerId: star.id, page: .init(limit: 7, cursor: cursor))
            seen += page.items.map(\.userId)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen.count == 25 && Set(seen).count == 25)
        // One follow notification per fan who ends following, none for the others: each
        // unfollow removed its notification, each follow again made one.
        let list = try await SQLNotificationStore(database: database).list(
            recipientId: star.id, page: .init(limit: 100))
        #expect(list.items.count == 25 && list.unreadCount == 25)
        #expect(Set(list.items.map(\.actorId)) == Set(fans.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.id)))
    }

    @Test func listsAreNewestFirstWithoutRepeatsOrSkipsWhileEdgesChange() async throws {
        let star = Self.user("star")
        let fans = (0..<12).map { Self.user("fan\($0)") }
        for fan in fans { try await follow(fan, star) }
        var seen: [String] = []
        var page = try await store.edges(userId: star.id, following: false, viewerId: star.id, page: .init(limit: 5))
        seen += page.items.map(\.userId)
        // Between pages: new followers (newer than any cursor) and a re-follow that moves fan0 to the front.
        try await follow(Self.user("late1"), star)
        try await store.unfollow(followerId: fans[0].id, followeeId: star.id)
        try await follow(fans[0], star)
        while let cursor = page.nextCursor {
            page = try await store.edges(
                userId: star.id, following: false, viewerId: star.id, page: .init(limit: 5, cursor: cursor))
            seen += page.items.map(\.userId)
            try await follow(Self.user("late\(seen.count)"), star)
        }
        // The first walk: fans newest first, fan0 gone from where it was (it is now newest).
        #expect(seen == fans.dropFirst().reversed().map(\.id))
        let fresh = try await store.edges(userId: star.id, following: false, viewerId: star.id, page: .init(limit: 100))
        #expect(
            fresh.items.map(\.userId)
                == ["late11", "late10", "fan0", "late1"].map { Self.user($0).id } + fans.dropFirst().reversed().map(\.id))
        #expect(fresh.nextCursor == nil)

        let following = try await store.edges(userId: fans[1].id, following: true, viewerId: fans[1].id, page: .init())
        #expect(following.items == [.init(userId: star.id, followState: .following)])
    }

    @Test func entriesAndStatesCarryTheViewersRelation() async throws {
        let (ann, ben, cat, dan) = (Self.user("ann"), Self.user("ben"), Self.user("cat"), Self.user("dan"))
        try await follow(ben, ann)
        try await follow(cat, ann)
        try await follow(dan, ann)
        try await follow(ben, cat)  // ben (the viewer) follows cat, not dan
        let page = try await store.edges(userId: ann.id, following: false, viewerId: ben.id, page: .init(limit: 2))
        #expect(
            page.items == [.init(userId: dan.id, followState: .notFollowing), .init(userId: cat.id, followState: .following)])
        let rest = try await store.edges(
            userId: ann.id, following: false, viewerId: ben.id, page: .init(limit: 2, cursor: page.nextCursor))
        #expect(rest.items == [.init(userId: ben.id, followState: .self)])
        #expect(rest.nextCursor == nil)
        let states = try await store.states(viewerId: ben.id, userIds: [ann.id, cat.id, dan.id, ben.id, "u-unknown", ann.id])
        #expect(
            states == [ann.id: .following, cat.id: .following, dan.id: .notFollowing, ben.id: .self, "u-unknown": .notFollowing])
    }
}
