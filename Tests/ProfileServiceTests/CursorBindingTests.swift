import Foundation
import Messages
import Storage
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// Issue 11, point 10: a cursor is bound to the list that gave it out (the grid, the tagged
/// tab, a post's likes or comments) and to that list's owner. A cursor used anywhere else, or a
/// token no list gave out, is 400 `invalid_cursor` naming the `cursor` field.
@Suite struct CursorBindingTests {
    /// Two users with two-page grids and tagged tabs, a post with two pages of likes and of
    /// comments, and a cursor from each list.
    struct Lists {
        let f: ProfileFixture
        let alice: Me
        let bob: Me
        let post: Profile.Post
        let other: Profile.Post
        let cursors: [String: String]

        init() async throws {
            f = try await ProfileFixture()
            alice = try await f.register("alice")
            bob = try await f.register("bob")
            for _ in 0..<3 {
                try await f.post(alice, tagged: ["bob"])
                try await f.post(bob, tagged: ["alice"])
            }
            post = try await f.post(alice)
            other = try await f.post(alice)
            for user in [alice, bob] {
                for p in [post, other] {
                    _ = try await f.call(Profile.SetLike.self, .init(userId: user.id, postId: p.id, liked: true))
                    _ = try await f.app.engagement.addComment(.init(userId: user.id, postId: p.id, text: "hi"))
                }
            }
            var cursors: [String: String] = [:]
            cursors["alice.grid"] = try await f.postsPage(alice, "alice", limit: 2).nextCursor
            cursors["alice.tagged"] = try await f.postsPage(alice, "alice", tagged: true, limit: 2).nextCursor
            cursors["bob.grid"] = try await f.postsPage(alice, "bob", limit: 2).nextCursor
            cursors["post.likes"] =
                try await f.call(Profile.ListLikes.self, .init(postId: post.id, page: .init(limit: 1))).nextCursor
            cursors["post.comments"] =
                try await f.call(Profile.ListComments.self, .init(postId: post.id, page: .init(limit: 1))).nextCursor
            cursors["other.likes"] =
                try await f.call(Profile.ListLikes.self, .init(postId: other.id, page: .init(limit: 1))).nextCursor
            self.cursors = cursors
        }

        /// Uses `cursor` on one of the lists; returns the page's ids.
        func use(_ cursor: String, on list: String) async throws -> [String] {
            let page = PageRequest(limit: 2, cursor: cursor)
            switch list {
            case "alice.grid": return try await f.postsPage(bob, "alice", limit: 2, cursor: cursor).items.map(\.id)
            case "alice.tagged":
                return try await f.postsPage(bob, "alice", tagged: true, limit: 2, cursor: cursor).items.map(\.id)
            case "bob.grid": return try await f.postsPage(bob, "bob", limit: 2, cursor: cursor).items.map(\.id)
            case "bob.tagged": return try await f.postsPage(bob, "bob", tagged: true, limit: 2, cursor: cursor).items.map(\.id)
            case "post.likes": return try await f.call(Profile.ListLikes.self, .init(postId: post.id, page: page)).items.map(\.id)
            case "post.comments":
                return try await f.call(Profile.ListComments.self, .init(postId: post.id, page: page)).items.map(\.id)
            case "other.likes":
                return try await f.call(Profile.ListLikes.self, .init(postId: other.id, page: page)).items.map(\.id)
            case "other.comments":
                return try await f.call(Profile.ListComments.self, .init(postId: other.id, page: page)).items.map(\.id)
            default: fatalError(list)
            }
        }

        static let all = [
            "alice.grid", "alice.tagged", "bob.grid", "bob.tagged", "post.likes", "post.comments", "other.likes",
            "other.comments",
        ]
    }

    func expectInvalidCursor(_ error: ServiceError?, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.status == 400 && error?.code == "invalid_cursor", "\(what)", sourceLocation: sourceLocation)
        #expect(error?.fields?.map(\.field) == ["cursor"], "\(what)", sourceLocation: sourceLocation)
        #expect(error?.fields?.map(\.code) == ["invalid_cursor"], "\(what)", sourceLocation: sourceLocation)
    }

    @Test func aCursorWorksOnlyOnTheListThatGaveItOut() async throws {
        let l = try await Lists()
        for (source, cursor) in l.cursors.sorted(by: { $0.key < $1.key }) {
            for target in Lists.all {
                if target == source {
                    #expect(try await !l.use(cursor, on: target).isEmpty, "\(source) on itself")
                } else {
                    expectInvalidCursor(await serviceError { try await l.use(cursor, on: target) }, "\(source) on \(target)")
                }
            }
        }
    }

    @Test func aTokenNoListGaveOutIsRefused() async throws {
        let l = try await Lists()
        let owner = l.alice.id
        func token(_ payload: String) -> String {
            "c1."
                + Data(payload.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let valid = try #require(l.cursors["alice.grid"])
        // One character of the sealed part changed: the authentication fails.
        var tampered = Array(valid)
        let i = tampered.count / 2
        tampered[i] = tampered[i] == "A" ? "B" : "A"
        // A cursor another database gave out (its own key), for the same list and owner.
        let other = PageCursor(key: (0..<32).map { _ in UInt8.random(in: 0...255) })
        let garbage = [
            "", "abc", "-1", "0", "c1.", "c1.!!!!", "c1." + valid.dropFirst(3), "c2.", "c2.!!!!", String(valid.dropFirst(3)),
            String(tampered), String(valid.dropLast(2)), other.encode(list: "posts", owner: owner, key: 5),
            "c2." + token("posts\n\(owner)\n5").dropFirst(3),
            token("posts\n\(owner)"), token("posts\n\(owner)\n"), token("posts\n\(owner)\nseven"), token("posts\n\(owner)\n0"),
            token("posts\n\(owner)\n-5"), token("posts\n\(owner)\n5\nextra"), token("posts\n\(owner)\n99999999999999999999"),
            "c1." + String(repeating: "A", count: 600), "c1." + Data([0xff, 0xfe, 0x0a, 0x0a, 0x31]).base64EncodedString(),
        ]
        for bad in garbage {
            expectInvalidCursor(await serviceError { try await l.use(bad, on: "alice.grid") }, bad.debugDescription)
            expectInvalidCursor(await serviceError { try await l.use(bad, on: "post.comments") }, bad.debugDescription)
        }
    }

    /// A grid cursor keeps its meaning when the list's owner is renamed: it is bound to the
    /// account, not to the name used to reach the list.
    @Test func aCursorSurvivesARenameOfItsOwner() async throws {
        let l = try await Lists()
        let cursor = try #require(l.cursors["alice.grid"])
        let before = try await l.f.postsPage(l.bob, "alice", limit: 2, cursor: cursor).items.map(\.id)
        _ = try await l.f.app.profiles.updateMe(
            .init(userId: l.alice.id, username: "alice.new"), l.f.context(Profile.UpdateMe.type))
        #expect(try await l.f.postsPage(l.bob, "alice.new", limit: 2, cursor: cursor).items.map(\.id) == before)
    }
}
