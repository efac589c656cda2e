import Foundation
import Messages
import Testing
import Wire

@testable import Gateway

/// The gateway's own links (`PublicLinks`): relative unless `GATEWAY_PUBLIC_URL` names the public
/// base URL, then absolute on it; never built from what the gateway sees behind the TLS front.
@Suite struct PublicLinksTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func publicURLMustBeHTTPSWithHostAndPortOnly() throws {
        #expect(try PublicLinks.parse(nil) == nil)
        #expect(try PublicLinks.parse("") == nil)
        #expect(try PublicLinks.parse("https://api.example.com") == "https://api.example.com")
        #expect(try PublicLinks.parse("https://api.example.com:8443/") == "https://api.example.com:8443")
        #expect(try PublicLinks.parse("http://localhost:8080") == "http://localhost:8080")
        #expect(try PublicLinks.parse("http://127.0.0.1:8080") == "http://127.0.0.1:8080")
        for bad in [
            "http://api.example.com", "api.example.com", "https://", "https://api.example.com/v1",
            "https://api.example.com?x=1", "https://user@api.example.com", "ftp://api.example.com",
            "https://api.example.com/\"", "https://api.exa mple.com",
        ] {
            #expect(throws: InvalidPublicURL.self, "\(bad)") { try PublicLinks.parse(bad) }
        }
    }

    @Test func withoutAPublicURLBodiesAreUnchanged() {
        let body = Array(#"{"url":"/media/ab/1080","thumbnailURL":"/media/ab/square320"}"#.utf8)
        #expect(PublicLinks(base: nil).absolutized(body) == body)
    }

    @Test func mediaLinksBecomeAbsoluteOnThePublicURL() throws {
        let links = PublicLinks(base: "https://api.example.com")
        let me = Me(
            id: "u1", username: "ann", name: "Ann", bio: "", profilePhotoURL: "/media/ab/square320",
            email: "ann@example.com", phone: nil, gender: nil, birthDate: nil, joinDate: "2026-01-01")
        let written = text(links.absolutized(try JSONWriter.encode(me)))
        #expect(written.contains(#""profilePhotoURL":"https://api.example.com/media/ab/square320""#))
        let media = Profile.Media(
            id: "ab", kind: "photo", url: "/media/ab/1080", thumbnailURL: "/media/ab/square320", width: 4, height: 3,
            durationMs: nil)
        let object = try #require(
            JSONSerialization.jsonObject(with: Data(links.absolutized(try JSONWriter.encode(media)))) as? [String: Any])
        #expect(object["url"] as? String == "https://api.example.com/media/ab/1080")
        #expect(object["thumbnailURL"] as? String == "https://api.example.com/media/ab/square320")
    }

    @Test func onlyLinkMembersAndOnlyMediaPathsChange() throws {
        let links = PublicLinks(base: "https://api.example.com")
        // A user's text that looks like a link member, other members, and links that are not media.
        let body: [String: String] = [
            "bio": #""url":"/media/x/1080""#, "caption": "/media/x/1080", "mediaURL": "https://img.example/a.jpg",
            "thumbnailURL": "/media/x/square320", "text": #"x","url":"/media/"#,
        ]
        let written = links.absolutized(try JSONWriter.encode(body))
        let object = try #require(JSONSerialization.jsonObject(with: Data(written)) as? [String: String])
        #expect(object["bio"] == body["bio"])
        #expect(object["caption"] == "/media/x/1080")
        #expect(object["text"] == body["text"])
        #expect(object["mediaURL"] == "https://img.example/a.jpg")
        #expect(object["thumbnailURL"] == "https://api.example.com/media/x/square320")
    }

    @Test func openAPIServersAreThePublicURLOrRelative() throws {
        let document = OpenAPIDocument.bytes
        #expect(PublicLinks(base: nil).openAPIDocument(document) == document)
        func servers(_ bytes: [UInt8]) throws -> [[String: Any]] {
            let object = try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            return try #require(object["servers"] as? [[String: Any]])
        }
        #expect(try servers(document).map { $0["url"] as? String } == ["/"])
        let served = PublicLinks(base: "https://api.example.com").openAPIDocument(document)
        #expect(try servers(served).map { $0["url"] as? String } == ["https://api.example.com"])
        #expect(!text(served).contains("http://"))
    }
}
