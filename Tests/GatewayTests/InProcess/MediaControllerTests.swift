import Messages
import Testing
import Wire

@testable import Gateway

/// Uploads and serving: `Range` parsing (RFC 9110 §14.1.2) and `If-None-Match` matching; in
/// process on a fake ProfileService, an upload sent as the binary frame with its declared type,
/// and a variant served with its ETag, 304 for a matching `If-None-Match`, 416 for a range
/// outside it, and its body read chunk by chunk.
@Suite struct MediaControllerTests {
    let gateway = InProcessGateway()
    static let id = String(repeating: "ab", count: 32)

    @Test func byteRanges() {
        #expect(ByteRange.parse("bytes=0-99", size: 1000) == .range(0..<100))
        #expect(ByteRange.parse("bytes=990-5000", size: 1000) == .range(990..<1000))
        #expect(ByteRange.parse("bytes=500-", size: 1000) == .range(500..<1000))
        #expect(ByteRange.parse("bytes=-10", size: 1000) == .range(990..<1000))
        #expect(ByteRange.parse("bytes=-5000", size: 1000) == .range(0..<1000))
        #expect(ByteRange.parse("bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 1000) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=0-1,5-6", size: 1000) == .ignored)
        #expect(ByteRange.parse("items=0-1", size: 1000) == .ignored)
        #expect(ByteRange.parse("bytes=9-1", size: 1000) == .ignored)
        #expect(ByteRange.parse("bytes=a-b", size: 1000) == .ignored)
    }

    @Test func entityTagsAndUploadLimits() {
        #expect(MediaController.matches("\"a\", \"b\"", "\"b\""))
        #expect(MediaController.matches("W/\"b\"", "\"b\""))
        #expect(MediaController.matches("*", "\"b\""))
        #expect(!MediaController.matches("\"c\"", "\"b\""))
        #expect(MediaController.uploadLimit(HTTPHeaders(fields: [("content-type", "image/jpeg")])) == 20 << 20)
        #expect(MediaController.uploadLimit(HTTPHeaders(fields: [("content-type", "video/mp4")])) == 100 << 20)
        #expect(MediaController.uploadLimit(HTTPHeaders(fields: [])) == 100 << 20)
    }

    @Test func anUploadIsSentAsTheBinaryFrameWithItsDeclaredType() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.UploadMedia.self) { _, _ in
            Profile.Media(
                id: Self.id, kind: "photo", url: "/media/\(Self.id)/original", thumbnailURL: "/media/\(Self.id)/thumb",
                width: 1, height: 1, durationMs: nil)
        }
        let r = await gateway.request(
            .post, "/v1/media", token: token, body: [0xff, 0xd8, 0xff], headers: [("content-type", "image/jpeg")])
        #expect(r.status == 201 && r["id"] == .string(Self.id))
        let call = gateway.profile.calls.last
        #expect(call?.binary == [0xff, 0xd8, 0xff] && call?.timeoutMs == MediaController.uploadTimeoutMs)
        #expect(gateway.profile.requests(Profile.UploadMedia.self).first?.contentType == "image/jpeg")
        // The route's limit comes from the declared type, before the body is read.
        let route = gateway.app.dispatcher.route(
            .post, path: "/v1/media", headers: HTTPHeaders(fields: [("content-type", "image/heic")]))
        #expect(route.maxBodyBytes == MediaController.maxPhotoBytes)
        let video = gateway.app.dispatcher.route(
            .post, path: "/v1/media", headers: HTTPHeaders(fields: [("content-type", "video/mp4")]))
        #expect(video.maxBodyBytes == MediaController.maxUploadBytes)
    }

    @Test func aVariantIsServedWithItsETagAnd304WhenTheClientHasIt() async throws {
        let bytes = Array("0123456789".utf8)
        gateway.profile.onBinary(Profile.ReadMedia.self) { request, _, _ in
            let reply = Profile.ReadMedia.Reply(size: bytes.count, contentType: "image/jpeg", etag: "\"e1\"")
            let end = min(bytes.count, request.offset + request.length)
            return (reply, request.length == 0 ? [] : Array(bytes[request.offset..<end]))
        }
        let path = "/media/\(Self.id)/original"
        let cached = await gateway.request(.get, path, headers: [("if-none-match", "W/\"e1\"")])
        #expect(cached.status == 304 && cached.header("ETag") == "\"e1\"" && cached.header("Content-Type") == nil)
        let range = await gateway.request(.get, path, headers: [("range", "bytes=20-")])
        #expect(range.status == 416 && range.header("Content-Range") == "bytes */10" && range.code == "range_not_satisfiable")
        let part = await gateway.request(.get, path, headers: [("range", "bytes=2-4")])
        #expect(part.status == 206 && part.header("Content-Range") == "bytes 2-4/10")
        guard case .source(let source) = part.response.body else {
            Issue.record("not a chunked body")
            return
        }
        #expect(source.length == 3)
        #expect(try await source.next() == Array("234".utf8))
        // Only the metadata was read for the 304 and the 416; one chunk for the 206.
        #expect(gateway.profile.requests(Profile.ReadMedia.self).map(\.length) == [0, 0, 0, 3])
        let bad = await gateway.request(.get, "/media/not-an-id/original")
        #expect(bad.status == 404 && gateway.profile.count(Profile.ReadMedia.self) == 4)
    }
}
