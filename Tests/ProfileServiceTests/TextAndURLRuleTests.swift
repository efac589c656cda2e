import Foundation
import Messages
import TestSupport
import Testing
import Wire

@testable import ProfileService

/// Issue 11, point 5, for the fields ProfileService owns: control characters (C0, DEL, C1) are
/// refused with `invalid_field` naming the field, `\n` is allowed in bio, caption and comment
/// text but not in a name; URLs are parsed, each violation a field error whose message says
/// what is wrong; the bio rule is ProfileService's one rule (150 characters).
@Suite struct TextAndURLRuleTests {
    /// Every C0 control, DEL and every C1 control.
    static let controls: [Unicode.Scalar] = (Array(0x00...0x1F) + Array(0x7F...0x9F)).map { Unicode.Scalar($0)! }

    /// Asserts that `error` is exactly one `invalid_field` on `field` naming the character.
    func expectControlRefused(
        _ error: ServiceError?, _ field: String, _ scalar: Unicode.Scalar, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let name = "U+" + String(repeating: "0", count: 4 - hex.count) + hex
        #expect(error?.status == 400, "\(field) \(name)", sourceLocation: sourceLocation)
        #expect(error?.fields?.count == 1, "\(field) \(name)", sourceLocation: sourceLocation)
        #expect(error?.fields?.first?.field == field, "\(field) \(name)", sourceLocation: sourceLocation)
        #expect(error?.fields?.first?.code == "invalid_field", "\(field) \(name)", sourceLocation: sourceLocation)
        #expect(error?.fields?.first?.message.contains(name) == true, "\(field) \(name)", sourceLocation: sourceLocation)
    }

    @Test func controlCharactersAreRefusedNamingTheField() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice", name: "Alice")
        let post = try await f.post(a)
        let context = f.context(Profile.UpdateMe.type)
        for scalar in Self.controls {
            let text = "a\(Character(scalar))b"
            let multiLine = scalar == "\n"
            let name = await serviceError { try await f.app.profiles.updateMe(.init(userId: a.id, name: text), context) }
            expectControlRefused(name, "name", scalar)
            let checked = await serviceError {
                try await f.call(Profile.CheckProfileFields.self, .init(name: text, birthDate: nil, gender: nil))
            }
            expectControlRefused(checked, "name", scalar)
            if multiLine { continue }
            let bio = await serviceError { try await f.app.profiles.updateMe(.init(userId: a.id, bio: text), context) }
            expectControlRefused(bio, "bio", scalar)
            let caption = await serviceError {
                try await f.app.posts.createPost(
                    .init(
                        ownerId: a.id, postType: "photo", mediaURL: "https://x.example/m.jpg",
                        thumbnailURL: "https://x.example/t.jpg", caption: text, taggedUsernames: []))
            }
            expectControlRefused(caption, "caption", scalar)
            let comment = await serviceError {
                try await f.app.engagement.addComment(.init(userId: a.id, postId: post.id, text: text))
            }
            expectControlRefused(comment, "text", scalar)
        }
        // Nothing was stored.
        #expect(try await f.call(Profile.GetMe.self, .init(userId: a.id)) == a)
        #expect(try await f.app.profiles.header("alice").postCount == 1)
        #expect(try await f.call(Profile.ListComments.self, .init(postId: post.id, page: .init())).items.isEmpty)
    }

    /// Issue 18: a comment made only of format or bidi characters (and whitespace) shows nothing,
    /// so it is empty.
    @Test func aCommentOfOnlyFormatOrBidiCharactersIsEmpty() async throws {
        for text in ["\u{200B}", "\u{202E}\u{202C}", " \u{2066}\u{2069}\n", "\u{FEFF}\u{200D}"] {
            #expect(ProfileRules.commentText(text)?.code == "empty", "\(text.debugDescription)")
        }
        #expect(ProfileRules.commentText("ok\u{200D}") == nil)
    }

    /// A fresh-user trial stored a comment "a" + 150,000 combining accents: one grapheme
    /// cluster, so within "2,200 characters", and 300 KB. Code points are capped too.
    @Test func oneCharacterOfThousandsOfCodePointsIsTooLong() async throws {
        let stacked = "a" + String(repeating: "\u{301}", count: 150_000)
        #expect(stacked.count == 1)
        #expect(ProfileRules.commentText(stacked)?.code == "too_long")
        // The longest emoji sequences in use still count as one character each: 2,200 of them fit.
        let kisses = String(repeating: "👩🏽\u{200D}❤️\u{200D}💋\u{200D}👨🏻", count: ProfileRules.maxText)
        #expect(kisses.count == ProfileRules.maxText && ProfileRules.commentText(kisses) == nil)
    }

    @Test func lineBreaksAreKeptInBioCaptionAndCommentButNotInAName() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let context = f.context(Profile.UpdateMe.type)
        let me = try await f.app.profiles.updateMe(.init(userId: a.id, bio: "line one\nline two"), context)
        #expect(me.bio == "line one\nline two")
        let post = try await f.post(a, caption: "first\n\nsecond\n")
        #expect(post.caption == "first\n\nsecond\n")
        let comment = try await f.app.engagement.addComment(.init(userId: a.id, postId: post.id, text: "so\ngood"))
        #expect(comment.text == "so\ngood")
        #expect(
            try await f.call(Profile.ListComments.self, .init(postId: post.id, page: .init())).items.map(\.text) == ["so\ngood"])
        let name = await serviceError { try await f.app.profiles.updateMe(.init(userId: a.id, name: "Al\nice"), context) }
        #expect(fieldCodes(name) == ["name": "invalid_field"])
        // A carriage return is a control character like the others, even next to a line feed.
        let crlf = await serviceError { try await f.app.profiles.updateMe(.init(userId: a.id, bio: "one\r\ntwo"), context) }
        #expect(fieldCodes(crlf) == ["bio": "invalid_field"])
    }

    @Test func theBioRuleIs150CharactersInProfileService() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let context = f.context(Profile.UpdateMe.type)
        #expect(ProfileRules.maxBio == 150)
        // Characters as a user counts them: 150 emoji (each several UTF-8 bytes, some several scalars) fit.
        let emoji = String(repeating: "👍🏽", count: 150)
        #expect(try await f.app.profiles.updateMe(.init(userId: a.id, bio: emoji), context).bio == emoji)
        let plain = String(repeating: "b", count: 150)
        #expect(try await f.app.profiles.updateMe(.init(userId: a.id, bio: plain), context).bio == plain)
        let over = await serviceError {
            try await f.app.profiles.updateMe(.init(userId: a.id, bio: plain + "b"), context)
        }
        #expect(over?.fields == [FieldError(field: "bio", code: "too_long", message: "must be at most 150 characters")])
        #expect(try await f.call(Profile.GetMe.self, .init(userId: a.id)).bio == plain)
    }

    /// A URL that breaks one rule, with what its message must say.
    struct BadURL: Sendable, CustomTestStringConvertible {
        var url: String
        var says: String
        var testDescription: String { "\(url.prefix(40).debugDescription) (\(url.count) characters) says \(says)" }
    }

    static let badURLs: [BadURL] = [
        BadURL(url: "https://x.example/" + String(repeating: "a", count: 2_031), says: "too long"),
        BadURL(url: "https://x.example/a b.jpg", says: "spaces"),
        BadURL(url: "https://x.example/a\u{1}b.jpg", says: "control characters"),
        BadURL(url: "https://x.example/a\u{85}b.jpg", says: "control characters"),
        BadURL(url: "https://x.example/a%zzb.jpg", says: "percent-escape"),
        BadURL(url: "https://x.example/a.jpg%4", says: "percent-escape"),
        BadURL(url: "https://x.example:99999/a.jpg", says: "port"),
        BadURL(url: "https://x.example:0/a.jpg", says: "port"),
        BadURL(url: "https://x.example:http/a.jpg", says: "port"),
        BadURL(url: "https:///a.jpg", says: "host"),
        BadURL(url: "https://:443/a.jpg", says: "host"),
        BadURL(url: "ftp://x.example/a.jpg", says: "http or https scheme"),
        BadURL(url: "javascript:alert(1)", says: "http or https scheme"),
        BadURL(url: "file:///etc/passwd", says: "http or https scheme"),
        BadURL(url: "https://exämple.example/a.jpg", says: "non-ASCII"),
        BadURL(url: "https://x.example/ü.jpg", says: "non-ASCII"),
        BadURL(url: "/relative/a.jpg", says: "absolute"),
        BadURL(url: "https:x.example/a.jpg", says: "absolute"),
        BadURL(url: "https://x.example/a<b>.jpg", says: "character"),
    ]

    @Test(arguments: badURLs)
    func eachURLViolationIsAFieldErrorSayingWhatIsWrong(_ bad: BadURL) async throws {
        let (url, says) = (bad.url, bad.says)
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let photo = await serviceError {
            try await f.app.profiles.updateMe(.init(userId: a.id, profilePhotoURL: url), f.context(Profile.UpdateMe.type))
        }
        #expect(photo?.status == 400 && photo?.fields?.count == 1)
        let error = try #require(photo?.fields?.first)
        #expect(error.field == "profilePhotoURL" && error.code == "invalid_url")
        #expect(error.message.contains(says), "\(error.message)")
        // The same rule, the same message, for a post's two URLs, reported together.
        let post = await serviceError {
            try await f.app.posts.createPost(
                .init(ownerId: a.id, postType: "photo", mediaURL: url, thumbnailURL: url, caption: nil, taggedUsernames: []))
        }
        #expect(post?.fields?.map(\.field) == ["mediaURL", "thumbnailURL"])
        #expect(post?.fields?.allSatisfy { $0.code == "invalid_url" && $0.message == error.message } == true)
    }

    @Test func wellFormedURLsAreAccepted() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let longest = "https://x.example/" + String(repeating: "a", count: 2_048 - 18)
        #expect(longest.count == 2_048)
        for url in [
            longest, "https://x.example:8443/a%20b.jpg?size=1&v=2#top", "http://[::1]:8080/p.jpg", "HTTPS://X.EXAMPLE/A.JPG",
            "https://user:pw@x.example/a.jpg", "https://x.example", "https://x.example:/a.jpg",
        ] {
            let me = try await f.app.profiles.updateMe(
                .init(userId: a.id, profilePhotoURL: url), f.context(Profile.UpdateMe.type))
            #expect(me.profilePhotoURL == url)
            let post = try await f.app.posts.createPost(
                .init(ownerId: a.id, postType: "photo", mediaURL: url, thumbnailURL: url, caption: nil, taggedUsernames: []))
            #expect(post.mediaURL == url)
        }
    }

    @Test func urlErrorsComeTogetherWithEveryOtherFieldError() async throws {
        let f = try await ProfileFixture()
        let a = try await f.register("alice")
        let error = await serviceError {
            try await f.app.posts.createPost(
                .init(
                    ownerId: a.id, postType: "photo", mediaURL: "https://x.example/a b.jpg",
                    thumbnailURL: "https://x.example:70000/t.jpg", caption: "bad\u{0}caption", taggedUsernames: []))
        }
        #expect(error?.status == 400 && error?.code == "invalid_field")
        #expect(fieldCodes(error) == ["mediaURL": "invalid_url", "thumbnailURL": "invalid_url", "caption": "invalid_field"])
        let messages = Dictionary(uniqueKeysWithValues: (error?.fields ?? []).map { ($0.field, $0.message) })
        #expect(messages["mediaURL"]?.contains("spaces") == true && messages["thumbnailURL"]?.contains("port") == true)
    }
}
