import Foundation
import Messages
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// The SQLite stores on a temp database, identities seeded straight into the replica with
/// `IdentityReplica.apply`: each change commits with the event that announces it, counters move
/// only on a real change, rows of accounts the replica does not know are shown, not dropped.
@Suite struct StoreTests {
    struct Stores {
        let f: ProfileFixture
        let users: SQLProfileStore
        let posts: SQLPostStore
        let engagement: SQLEngagementStore

        init() async throws {
            f = try await ProfileFixture()
            users = SQLProfileStore(database: f.database, replica: f.app.replica)
            posts = SQLPostStore(database: f.database)
            engagement = SQLEngagementStore(database: f.database)
        }

        /// Seeds identities into the replica (profile rows are created with them).
        func seed(_ identities: Identity...) async throws {
            let replica = f.app.replica
            try await f.database.write { tx in
                for i in identities { try replica.apply(i, in: tx) }
            }
        }

        func newPost(_ owner: String, tagged: [String] = []) -> NewPost {
            NewPost(
                id: RandomID.make(), ownerId: owner, postType: "photo", mediaURL: "https://x.example/m.jpg",
                thumbnailURL: "https://x.example/t.jpg", caption: "", taggedUserIds: tagged, createdAt: Timestamp.now())
        }
    }

    static let alice = Identity(id: "a1", username: "Alice", email: "alice@example.com", version: 1)
    static let bob = Identity(id: "b1", username: "bob", email: "bob@example.com", version: 1)

    @Test func aSeededIdentityGetsAProfileAndIsFoundByIdOrAnyCaseOfItsName() async throws {
        let s = try await Stores()
        try await s.seed(Self.alice)
        let byId = try #require(try await s.users.user(id: "a1"))
        #expect(byId.username == "alice" && byId.email == "alice@example.com" && byId.name == "" && !byId.saveOriginalPosts)
        #expect(try await s.users.users(usernames: ["ALICE", "alice"]).keys.sorted() == ["alice"])
        #expect(try await s.users.users(ids: ["a1", "a1"])["a1"] == byId)
        // Misses are asked of AuthService once per call, together.
        #expect(try await s.users.users(ids: ["x1", "x2", "a1"]).keys.sorted() == ["a1"])
        #expect(s.f.auth.lookups.map { Set($0.ids) } == [["x1", "x2"]])
    }

    @Test func createProfileNeverLetsAnOlderIdentityWin() async throws {
        let s = try await Stores()
        var renamed = Self.alice
        renamed.username = "alice2"
        renamed.version = 2
        try await s.seed(renamed)
        let created = try await s.users.createProfile(Self.alice, name: "Alice", birthDate: nil, gender: "female")
        #expect(created.username == "alice2" && created.name == "Alice" && created.gender == "female")
        // Profile fields already set are kept when a repeated call leaves them out.
        let again = try await s.users.createProfile(Self.alice, name: nil, birthDate: nil, gender: nil)
        #expect(again == created)
    }

    @Test func updateEmitsOnlyWhenThePublicProfileChangesAndUnknownIs404() async throws {
        let s = try await Stores()
        try await s.seed(Self.alice)
        _ = try await s.users.update(userId: "a1", identity: nil, ProfileChanges(phone: "123", gender: "male"))
        #expect(try await s.f.eventTypes().isEmpty)
        let renamed = Identity(id: "a1", username: "alice.b", email: "ab@example.com", version: 2)
        let after = try await s.users.update(userId: "a1", identity: renamed, ProfileChanges(bio: "hi\nthere"))
        #expect(after.username == "alice.b" && after.email == "ab@example.com" && after.bio == "hi\nthere")
        #expect(after.phone == "123" && after.gender == "male")
        #expect(try await s.f.events(Profile.ProfileChanged.self).map(\.user) == [after.publicUser])
        let missing = await serviceError { try await s.users.update(userId: "zz", identity: nil, ProfileChanges(name: "x")) }
        #expect(missing?.status == 404)
        #expect(try await s.f.eventTypes().count == 1)
    }

    @Test func postsCommitWithTheirEventAndShowUnknownUsersWithEmptyProfiles() async throws {
        let s = try await Stores()
        try await s.seed(Self.alice, Self.bob)
        let post = try await s.posts.create(s.newPost("a1", tagged: ["b1", "ghost"]))
        #expect(post.owner.username == "alice" && post.taggedUsers.map(\.username) == ["bob", ""])
        #expect(post.taggedUsers.map(\.id) == ["b1", "ghost"])
        #expect(try await s.f.events(Profile.PostCreated.self).map(\.taggedUserIds) == [["b1", "ghost"]])
        // A post whose owner the replica does not know is still listed.
        let orphan = try await s.posts.create(s.newPost("ghost", tagged: ["b1"]))
        let tagged = try await s.posts.page(userId: "b1", tagged: true, viewerId: "b1", page: .init())
        #expect(tagged.items.map(\.id) == [orphan.id, post.id] && tagged.items[0].owner.username == "")
        #expect(try await s.posts.count(ownerId: "a1") == 1)
        // The header's read: the user by name (any case) and the count, in one statement.
        let header = try await s.users.header(username: "ALICE")
        #expect(header?.user.id == "a1" && header?.postCount == 1)
        #expect(try await s.users.header(username: "bob")?.postCount == 0)
        #expect(try await s.users.header(username: "nobody") == nil)
        let forbidden = await serviceError { try await s.posts.delete(id: post.id, by: "b1") }
        #expect(forbidden?.status == 403)
        try await s.posts.delete(id: post.id, by: "a1")
        #expect(try await s.posts.post(id: post.id, viewerId: "a1") == nil)
        #expect(try await s.f.eventTypes() == [Profile.PostCreated.type, Profile.PostCreated.type, Profile.PostDeleted.type])
    }

    @Test func likeCountersMoveOnlyOnARealChange() async throws {
        let s = try await Stores()
        try await s.seed(Self.alice, Self.bob)
        let post = try await s.posts.create(s.newPost("a1"))
        #expect(try await s.engagement.setLike(postId: post.id, userId: "b1", liked: false) == .init(liked: false, likeCount: 0))
        #expect(try await s.engagement.setLike(postId: post.id, userId: "b1", liked: true) == .init(liked: true, likeCount: 1))
        #expect(try await s.engagement.setLike(postId: post.id, userId: "b1", liked: true) == .init(liked: true, likeCount: 1))
        #expect(try await s.engagement.setLike(postId: post.id, userId: "ghost", liked: true) == .init(liked: true, likeCount: 2))
        // A liker the replica does not know is left out of the list (the counter still counts them).
        let likers = try await s.engagement.likes(postId: post.id, page: .init(), viewerId: nil)
        #expect(likers.items.map(\.id) == ["b1"] && likers.nextCursor == nil)
        let counted = try await s.f.database.read { c in
            (try c.scalar("SELECT like_count FROM posts"), try c.scalar("SELECT COUNT(*) FROM likes"))
        }
        #expect(counted.0 == 2 && counted.1 == 2)
        #expect(
            try await s.f.eventTypes().filter { $0 != Profile.PostCreated.type } == [
                Profile.PostLiked.type, Profile.PostLiked.type,
            ])
        let missing = await serviceError { try await s.engagement.setLike(postId: "nope", userId: "b1", liked: true) }
        #expect(missing?.status == 404)
    }

    @Test func commentsCountAndKeepTheirAuthorWhenTheReplicaMissesThem() async throws {
        let s = try await Stores()
        try await s.seed(Self.alice)
        let post = try await s.posts.create(s.newPost("a1"))
        let comment = try await s.engagement.addComment(
            NewComment(id: "c1", postId: post.id, authorId: "ghost", text: "hello", createdAt: Timestamp.now()))
        #expect(comment.author.id == "ghost" && comment.author.username == "")
        let listed = try await s.engagement.comments(postId: post.id, page: .init(), viewerId: nil)
        #expect(listed.items.map(\.id) == ["c1"] && listed.items[0].author.id == "ghost")
        #expect(try await s.posts.post(id: post.id, viewerId: "a1")?.commentCount == 1)
        let missing = await serviceError {
            try await s.engagement.addComment(
                NewComment(id: "c2", postId: "nope", authorId: "a1", text: "x", createdAt: Timestamp.now()))
        }
        #expect(missing?.status == 404)
        #expect(try await s.f.events(Profile.PostCommented.self).map(\.commentId) == ["c1"])
    }
}
