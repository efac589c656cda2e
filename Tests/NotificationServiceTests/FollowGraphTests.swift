import Foundation
import Shared
import TestSupport
import Testing

/// The follow graph over ZeroMQ: follow/unfollow rules, counts, lists and follow states.
@Suite(.serialized)
struct FollowGraphTests {
    @Test func followUnfollowCountsAndErrors() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let alice = try await h.auth.register("alice")
        let bob = try await h.auth.register("bob")

        #expect(try await h.follow(alice, "bob") == .init(followState: .following, notifyPosts: false))
        #expect(
            try await h.follow(alice, "BOB", notifyPosts: true)
                == .init(followState: .following, notifyPosts: true))
        #expect(try await h.follow(alice, "bob") == .init(followState: .following, notifyPosts: true))  // nil keeps the flag
        var header = try await h.header(alice, "bob")
        #expect(header == .init(userId: bob.id, followers: 1, following: 0, followState: .following))
        header = try await h.header(bob, "alice")
        #expect(
            header == .init(userId: alice.id, followers: 0, following: 1, followState: .notFollowing))
        #expect(try await h.header(bob, "bob").followState == .self)

        #expect(try await h.unfollow(alice, "bob").followState == .notFollowing)
        #expect(try await h.unfollow(alice, "bob").followState == .notFollowing)  // idempotent
        header = try await h.header(alice, "bob")
        #expect(header.followers == 0 && header.followState == .notFollowing)
        // graph.follow.changed only on a real change: follow, notifyPosts on, unfollow.
        let outbox = try await h.client.call(Ops.Replay.self, .init(after: 0, limit: 1_000))
        let changes = outbox.events.filter { $0.contains("\"type\":\"graph.follow.changed\"") }
        #expect(changes.count == 3)
        #expect(changes.last?.contains("\"following\":false") == true)
        #expect(try await h.header(alice, "alice").following == 0)

        await #expect(throws: ServiceError.self) { try await h.follow(alice, "alice") }
        do {
            try await h.follow(alice, "alice")
        } catch let e as ServiceError {
            #expect(e.status == 422 && e.code == "cannot_follow_self")
        }
        do {
            try await h.follow(alice, "nobody")
            Issue.record("following an unknown user succeeded")
        } catch let e as ServiceError {
            #expect(e.status == 404 && e.code == "not_found")
        }
        do {
            _ = try await h.header(alice, "nobody")
            Issue.record("header of an unknown user succeeded")
        } catch let e as ServiceError {
            #expect(e.status == 404)
        }
    }

    @Test func unknownToReplicaFallsBackToLookupAndRenamesApply() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let alice = try await h.auth.register("alice")
        let quiet = try await h.auth.register("quiet", publish: false)  // only auth.lookup_users knows it
        #expect(try await h.follow(alice, "quiet").followState == .following)
        #expect(try await h.header(alice, "quiet").userId == quiet.id)

        _ = try await h.auth.rename(quiet.id, to: "loud")
        let end = Timestamp.nowMs() + 10_000
        var renamed = false
        while !renamed && Timestamp.nowMs() < end {
            renamed = (try? await h.header(alice, "loud"))?.userId == quiet.id
        }
        #expect(renamed)
        do {
            _ = try await h.header(alice, "quiet")
            Issue.record("the old username still resolves")
        } catch let e as ServiceError {
            #expect(e.status == 404)
        }
        #expect(try await h.header(alice, "loud").followers == 1)
    }

    @Test func fiftyConcurrentFollowUnfollowPairsLeaveExactCounts() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let star = try await h.auth.register("star")
        let fans = try await h.auth.register((0..<50).map { "fan\($0)" })
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, fan) in fans.enumerated() {
                group.addTask {
                    for _ in 0..<3 {
                        try await h.follow(fan, "star")
                        try await h.unfollow(fan, "star")
                    }
                    if i % 2 == 0 { try await h.follow(fan, "star") }
                }
            }
            try await group.waitForAll()
        }
        let header = try await h.header(star, "star")
        #expect(header.followers == 25)
        #expect(header.following == 0)
        for (i, fan) in fans.enumerated() {
            let own = try await h.header(fan, fan.username)
            #expect(own.following == (i % 2 == 0 ? 1 : 0))
        }
        // The list agrees with the count, newest edge first, paged without repeats.
        var seen: [String] = []
        var cursor: String? = nil
        repeat {
            let page = try await h.client.call(
                Graph.ListEdges.self,
                .init(
                    viewerId: star.id, username: "star", following: false,
                    page: .init(limit: 7, cursor: cursor)))
            seen += page.items.map(\.userId)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen.count == 25 && Set(seen).count == 25)
        // Follow notifications: one per fan, however often they re-followed.
        let notes = try await h.allNotifications(star)
        #expect(notes.count == 50)
        #expect(Set(notes.map(\.actorId)).count == 50)
    }

    @Test func listsCarryTheViewersFollowState() async throws {
        let h = try await Harness()
        defer { h.shutdown() }
        let ids = try await h.auth.register(["ann", "ben", "cat", "dan"])
        let (ann, ben, cat, dan) = (ids[0], ids[1], ids[2], ids[3])
        try await h.follow(ben, "ann")
        try await h.follow(cat, "ann")
        try await h.follow(dan, "ann")
        try await h.follow(ben, "cat")  // ben (the viewer) follows cat, not dan

        let page = try await h.client.call(
            Graph.ListEdges.self,
            .init(viewerId: ben.id, username: "ann", following: false, page: .init(limit: 2)))
        #expect(
            page.items == [
                .init(userId: dan.id, followState: .notFollowing),
                .init(userId: cat.id, followState: .following),
            ])
        let rest = try await h.client.call(
            Graph.ListEdges.self,
            .init(
                viewerId: ben.id, username: "ann", following: false,
                page: .init(limit: 2, cursor: page.nextCursor)))
        #expect(rest.items == [.init(userId: ben.id, followState: .self)])
        #expect(rest.nextCursor == nil)

        let following = try await h.client.call(
            Graph.ListEdges.self,
            .init(viewerId: ann.id, username: "ben", following: true, page: .init(limit: 10)))
        #expect(following.items.map(\.userId) == [cat.id, ann.id])
        #expect(following.items.map(\.followState) == [.notFollowing, .self])

        let states = try await h.client.call(
            Graph.FollowStates.self,
            .init(viewerId: ben.id, userIds: [ann.id, cat.id, dan.id, ben.id, "u-unknown"]))
        #expect(
            states.states == [
                ann.id: .following, cat.id: .following, dan.id: .notFollowing, ben.id: .self,
                "u-unknown": .notFollowing,
            ])

        do {
            _ = try await h.client.call(
                Graph.ListEdges.self,
                .init(
                    viewerId: ben.id, username: "ann", following: false, page: .init(limit: 2, cursor: "x")))
            Issue.record("a bad cursor was accepted")
        } catch let e as ServiceError {
            #expect(e.status == 400 && e.code == "invalid_cursor")
        }
    }
}
