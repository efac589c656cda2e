import BackendKit
import Foundation
import Messages
import Testing
import Wire

@testable import NotificationService

/// `GraphHandlers` called directly: the rules the API answers with (422, 404, case-insensitive
/// names, the replica's fallback to AuthService), counts, follow states and lists.
struct GraphHandlerTests {
    @Test func followUnfollowAndTheHeader() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let (alice, bob) = try await (s.user("alice"), s.user("bob"))
        #expect(try await s.follow(alice, "bob") == .init(followState: .following, notifyPosts: false))
        #expect(try await s.follow(alice, "BOB", notifyPosts: true) == .init(followState: .following, notifyPosts: true))
        #expect(try await s.follow(alice, "Bob") == .init(followState: .following, notifyPosts: true))
        #expect(
            try await s.header(alice, "bob") == .init(userId: bob.id, followers: 1, following: 0, followState: .following))
        #expect(
            try await s.header(bob, "alice")
                == .init(userId: alice.id, followers: 0, following: 1, followState: .notFollowing, followsYou: true))
        #expect(try await s.header(bob, "bob").followState == .self)
        #expect(try await s.unfollow(alice, "bob") == .init(followState: .notFollowing))
        #expect(try await s.unfollow(alice, "bob") == .init(followState: .notFollowing))  // idempotent
        #expect(try await s.header(alice, "bob").followers == 0)
        #expect(try await s.header(alice, "alice").following == 0)
        #expect(try await s.outboxTypes().filter { $0 == Notifications.FollowChanged.type }.count == 3)
    }

    @Test func followingYourselfIs422() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let alice = try await s.user("alice")
        for attempt in [{ try await s.follow(alice, "alice") }, { try await s.follow(alice, "ALICE", notifyPosts: true) }] {
            let error = await #expect(throws: ServiceError.self) { _ = try await attempt() }
            #expect(error?.status == 422 && error?.code == "cannot_follow_self")
        }
        let error = await #expect(throws: ServiceError.self) { try await s.unfollow(alice, "alice") }
        #expect(error?.status == 422 && error?.code == "cannot_follow_self")
        #expect(try await s.header(alice, "alice") == .init(userId: alice.id, followers: 0, following: 0, followState: .self))
        #expect(try await s.allNotifications(alice).isEmpty)
    }

    @Test func unknownUsersAre404() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let alice = try await s.user("alice")
        let ghost = Identity(id: "u-ghost", username: "ghost", email: "ghost@example.com", version: 1)
        let attempts: [(String, @Sendable () async throws -> Void)] = [
            ("follow", { try await s.follow(alice, "nobody") }),
            ("unfollow", { try await s.unfollow(alice, "nobody") }),
            ("header", { _ = try await s.header(alice, "nobody") }),
            ("followers", { _ = try await s.edges(alice, "nobody") }),
            ("following", { _ = try await s.edges(alice, "nobody", following: true) }),
            ("unknown follower", { try await s.follow(ghost, "alice") }),
        ]
        for (name, attempt) in attempts {
            let error = await #expect(throws: ServiceError.self, "\(name)") { try await attempt() }
            #expect(error?.status == 404 && error?.code == "not_found", "\(name)")
        }
        #expect(try await s.header(alice, "alice").followers == 0)
    }

    @Test func usersTheReplicaHasNotSeenAreLookedUpAtAuthService() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let alice = try await s.user("alice")
        let quiet = try await s.user("quiet", inReplica: false)  // only auth.lookup_users knows them
        let shy = try await s.user("shy", inReplica: false)
        #expect(try await s.follow(alice, "Quiet").followState == .following)
        #expect(try await s.header(alice, "quiet").userId == quiet.id)
        // A follower unknown to the replica is looked up by id.
        #expect(try await s.follow(shy, "alice").followState == .following)
        #expect(try await s.header(shy, "alice").followers == 1)
        // Both are in the replica now.
        let known = try await s.database.read { c in
            try ["quiet", "shy"].map { try IdentityReplica.identity(username: $0, on: c)?.id }
        }
        #expect(known == [quiet.id, shy.id])
    }

    @Test func aRenamedUserIsFoundByTheNewNameOnly() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let (alice, bob) = try await (s.user("alice"), s.user("bob"))
        try await s.follow(alice, "bob")
        let replica = s.app.replica
        let renamed = Identity(id: bob.id, username: "robert", email: bob.email, version: 2)
        _ = try await s.database.write { tx in try replica.apply(renamed, in: tx) }
        #expect(try await s.header(alice, "robert") == .init(userId: bob.id, followers: 1, following: 0, followState: .following))
        let error = await #expect(throws: ServiceError.self) { try await s.header(alice, "bob") }
        #expect(error?.status == 404)
        // An older version arriving late changes nothing.
        _ = try await s.database.write { tx in try replica.apply(bob, in: tx) }
        #expect(try await s.header(alice, "robert").userId == bob.id)
    }

    @Test func listsCarryTheViewersFollowStateAndStatesAnswerEveryId() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let ids = try await s.users(["ann", "ben", "cat", "dan"])
        let (ann, ben, cat, dan) = (ids[0], ids[1], ids[2], ids[3])
        try await s.follow(ben, "ann")
        try await s.follow(cat, "ann")
        try await s.follow(dan, "ann")
        try await s.follow(ben, "cat")
        let page = try await s.edges(ben, "ann", limit: 2)
        #expect(
            page.items == [.init(userId: dan.id, followState: .notFollowing), .init(userId: cat.id, followState: .following)])
        let rest = try await s.edges(ben, "ann", limit: 2, cursor: page.nextCursor)
        #expect(rest.items == [.init(userId: ben.id, followState: .self)])
        #expect(rest.nextCursor == nil)
        let following = try await s.edges(ann, "ben", following: true)
        #expect(following.items.map(\.userId) == [cat.id, ann.id])
        #expect(following.items.map(\.followState) == [.notFollowing, .self])
        let states = try await s.app.graph.followStates(
            .init(viewerId: ben.id, userIds: [ann.id, cat.id, dan.id, ben.id, "u-unknown"]))
        #expect(
            states.states == [
                ann.id: .following, cat.id: .following, dan.id: .notFollowing, ben.id: .self, "u-unknown": .notFollowing,
            ])
        let many = try await s.app.graph.followStates(.init(viewerId: ben.id, userIds: (0..<1_500).map { "u-\($0)" }))
        #expect(many.states.count == 1_000)  // at most 1,000 per request
    }

    /// Issue 11 point 10: a cursor names its list and owner; used anywhere else it is 400
    /// `invalid_cursor` naming the `cursor` field.
    @Test func cursorsAreBoundToTheListThatGaveThemOut() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let ids = try await s.users(["alice", "bob", "f1", "f2", "f3"])
        let (alice, bob) = (ids[0], ids[1])
        for fan in ids.dropFirst(2) {
            try await s.follow(fan, "alice")
            try await s.follow(fan, "bob")
            try await s.follow(alice, fan.username)
        }
        let followers = try await s.edges(alice, "alice", limit: 1)
        let cursor = try #require(followers.nextCursor)
        #expect(try await s.edges(alice, "alice", limit: 1, cursor: cursor).items.count == 1)  // its own list: fine
        let notifications = try await s.notifications(alice, limit: 1)
        let notificationCursor = try #require(notifications.nextCursor)

        let misuses: [(String, @Sendable () async throws -> Void)] = [
            (
                "alice's followers cursor on alice's following",
                { _ = try await s.edges(alice, "alice", following: true, cursor: cursor) }
            ),
            ("alice's followers cursor on bob's followers", { _ = try await s.edges(alice, "bob", cursor: cursor) }),
            ("alice's followers cursor on alice's notifications", { _ = try await s.notifications(alice, cursor: cursor) }),
            (
                "alice's notifications cursor on bob's notifications",
                { _ = try await s.notifications(bob, cursor: notificationCursor) }
            ),
            (
                "alice's notifications cursor on alice's followers",
                { _ = try await s.edges(alice, "alice", cursor: notificationCursor) }
            ),
            ("not a cursor", { _ = try await s.edges(alice, "alice", cursor: "x") }),
            ("a raw key", { _ = try await s.notifications(alice, cursor: "3") }),
        ]
        for (name, misuse) in misuses {
            let error = await #expect(throws: ServiceError.self, "\(name)") { try await misuse() }
            #expect(error?.status == 400 && error?.code == "invalid_cursor", "\(name)")
            #expect(error?.fields?.map(\.field) == ["cursor"], "\(name)")
        }
    }
}
