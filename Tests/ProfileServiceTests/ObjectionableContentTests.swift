import Foundation
import Harness
import Messages
import Support
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// The operator's word list (`MODERATION_WORDS_FILE`, `WordList`) in ProfileService: a caption,
/// comment, bio or name (at registration too) holding a listed term is refused with 422
/// `objectionable_content` naming the field, after the format rules (400 first), every refused
/// field at once (a new username's verdict from AuthService with them), and nothing is stored or
/// announced. On the store's engine (`TEST_STORAGE_ENGINE`).
@Suite struct ObjectionableContentTests {
    static func fixture() async throws -> ProfileFixture {
        var configuration = ProfileConfiguration()
        configuration.words = try WordList(lines: ["badword", "바보", "멍청한 사람"])
        let f = try await ProfileFixture(configuration: configuration)
        f.auth.refuse(configuration.words)
        return f
    }

    /// Asserts `error` is 422 `objectionable_content` naming exactly `fields`, in order.
    static func expectRefused(
        _ error: ServiceError?, _ fields: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            error?.status == 422 && error?.code == "objectionable_content", "\(String(describing: error))",
            sourceLocation: sourceLocation)
        #expect(error?.fields?.map(\.field) == fields, sourceLocation: sourceLocation)
        #expect(error?.fields?.allSatisfy { $0.code == "objectionable_content" } == true, sourceLocation: sourceLocation)
    }

    @Test func aCaptionWithAListedTermIsRefusedAndNoPostIsMade() async throws {
        let f = try await Self.fixture()
        let a = try await f.register("alice")
        for caption in ["what a BadWord!", "ＢＡＤＷＯＲＤ", "너는 바보", "그 멍청한 사람 같으니"] {
            Self.expectRefused(await serviceError { try await f.post(a, caption: caption) }, ["caption"])
        }
        #expect(try await f.allPosts(a, "alice").isEmpty)
        #expect(try await f.eventTypes().isEmpty)
        // Whole words only.
        for caption in ["badwordsmith", "바보짓은 그만", "정말 멍청한 사람이네"] { try await f.post(a, caption: caption) }
        #expect(try await f.allPosts(a, "alice").count == 3)
        // A post from an upload goes the same way (`profile.create_media_post` → `createPost`);
        // the format rules first: a bad post type with the term is 400 naming only `postType`.
        let both = await serviceError {
            try await f.app.posts.createPost(
                .init(
                    ownerId: a.id, postType: "story", mediaURL: "https://cdn.example.com/m.jpg",
                    thumbnailURL: "https://cdn.example.com/t.jpg", caption: "badword", taggedUsernames: []))
        }
        #expect(both?.status == 400 && both?.fields?.map(\.field) == ["postType"])
    }

    @Test func aCommentWithAListedTermIsRefusedAndNothingCounts() async throws {
        let f = try await Self.fixture()
        let a = try await f.register("alice")
        let b = try await f.register("bob")
        let post = try await f.post(a)
        let head = f.database.currentHead()
        for text in ["BADWORD", "ok, badword.", "바보"] {
            let error = await serviceError {
                try await f.call(Profile.AddComment.self, .init(userId: b.id, postId: post.id, text: text))
            }
            Self.expectRefused(error, ["text"])
        }
        // Refused keyed comments keep no reply: the key stays free for a corrected comment.
        Self.expectRefused(
            await serviceError {
                try await f.call(
                    Profile.AddComment.self, .init(userId: b.id, postId: post.id, text: "badword", idempotencyKey: "k1"))
            }, ["text"])
        _ = try await f.call(Profile.AddComment.self, .init(userId: b.id, postId: post.id, text: "nice", idempotencyKey: "k1"))
        #expect(try await f.call(Profile.GetPost.self, .init(viewerId: b.id, postId: post.id)).commentCount == 1)
        #expect(try await f.events().filter { $0.seq > head }.map(\.type) == [Profile.PostCommented.type])
        // Empty text is 400 `empty`, not the list's business.
        let empty = await serviceError {
            try await f.call(Profile.AddComment.self, .init(userId: b.id, postId: post.id, text: " "))
        }
        #expect(empty?.status == 400)
    }

    @Test func profileFieldsAreRefusedTogetherWithAUsernameAuthServiceRefuses() async throws {
        let f = try await Self.fixture()
        let a = try await f.register("alice", name: "Alice")
        func update(_ request: Profile.UpdateMe.Request) async -> ServiceError? {
            await serviceError { try await f.app.profiles.updateMe(request, f.context(Profile.UpdateMe.type)) }
        }
        Self.expectRefused(await update(.init(userId: a.id, name: "Mr BadWord")), ["name"])
        Self.expectRefused(await update(.init(userId: a.id, bio: "바보\nline two")), ["bio"])
        Self.expectRefused(
            await update(.init(userId: a.id, name: "badword", username: "the_badword", bio: "badword")),
            ["name", "bio", "username"])
        // A username alone: AuthService's verdict, passed through.
        Self.expectRefused(await update(.init(userId: a.id, username: "badword99")), ["username"])
        // The format rules first: a name with a control character is 400 naming only it.
        let format = await update(.init(userId: a.id, name: "a\u{7}b", username: "the_badword", bio: "badword"))
        #expect(format?.status == 400 && format?.fields?.map(\.field) == ["name"])
        #expect(try await f.call(Profile.GetMe.self, .init(userId: a.id)) == a)
        #expect(try await f.eventTypes().isEmpty)
        // Nothing refused is left: the update goes through.
        let me = try await f.app.profiles.updateMe(
            .init(userId: a.id, name: "Alice B", bio: "바보짓 금지"), f.context(Profile.UpdateMe.type))
        #expect(me.name == "Alice B" && me.bio == "바보짓 금지")
    }

    @Test func theRegistrationNameIsCheckedAndRefused() async throws {
        let f = try await Self.fixture()
        Self.expectRefused(
            await serviceError {
                try await f.call(Profile.CheckProfileFields.self, .init(name: " BadWord ", birthDate: nil, gender: nil))
            }, ["name"])
        let format = await serviceError {
            try await f.call(Profile.CheckProfileFields.self, .init(name: "badword", birthDate: nil, gender: "robot"))
        }
        #expect(format?.status == 400 && format?.fields?.map(\.field) == ["gender"])
        _ = try await f.call(Profile.CheckProfileFields.self, .init(name: "Good Name", birthDate: nil, gender: nil))
        let identity = try await f.auth.register("carol", publish: false)
        Self.expectRefused(
            await serviceError {
                try await f.app.profiles.createProfile(.init(identity: identity, name: "바보", birthDate: nil, gender: nil))
            }, ["name"])
    }

    @Test func withoutAListNothingIsRefused() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice", name: "badword")
        let post = try await f.post(a, caption: "badword")
        _ = try await f.call(Profile.AddComment.self, .init(userId: a.id, postId: post.id, text: "badword"))
    }

    @Test func theListIsReadFromTheVariableAndAnUnreadableFileStopsTheStart() throws {
        #expect(try ProfileConfiguration(env: Environment([:])).words.isEmpty)
        let directory = makeTemporaryDirectory("profile-words")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/words.txt"
        try Data("badword\n바보*\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try ProfileConfiguration(env: Environment([WordList.variable: path])).words.count == 2)
        try Data("ok\na$$\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/bad.txt"))
        for value in ["\(directory)/missing.txt", "\(directory)/bad.txt"] {
            do {
                _ = try ProfileConfiguration(env: Environment([WordList.variable: value]))
                Issue.record("\(value) accepted")
            } catch let error as ConfigurationError {
                #expect(error.variable == "MODERATION_WORDS_FILE" && error.value == value)
            }
        }
    }
}
