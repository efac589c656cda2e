import Foundation
import Harness
import TestSupport
import Testing
import Wire

/// API.md "Media" end to end over HTTP against the four real executables, with files made by the
/// tests (TestSupport's `MediaFiles`): uploads cleaned and resized, limits, serving with ETags,
/// 304s and ranges, posts from uploads, profile photos, and collection of unused media.
@Suite(.serialized)
struct MediaEndToEndTests {
    /// Without a collection delay, the request that releases media answers after its files are gone.
    static func startCluster() async throws -> Cluster {
        try await EndToEndTests.startCluster(["PROFILE_MEDIA_GC_DELAY_MS": "0"])
    }

    static func upload(
        _ http: HTTPClient, _ token: String, _ bytes: [UInt8], _ type: String, path: String = "/v1/media",
        method: String = "POST"
    ) throws -> Harness.HTTPResponse {
        try http.request(method, path, token: token, raw: bytes, headers: ["Content-Type": type], timeoutSeconds: 120)
    }

    /// exiftool's pixel size of an image.
    static func size(_ bytes: [UInt8]) throws -> (Int, Int) {
        let tags = try MediaFiles.exiftool(bytes)
        return (tags["File:ImageWidth"] as? Int ?? -1, tags["File:ImageHeight"] as? Int ?? -1)
    }

    static func expectProblem(
        _ r: Harness.HTTPResponse, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(r.status == status, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
        #expect(r.object["code"] as? String == code, "\(r.text)", sourceLocation: sourceLocation)
        #expect(
            r.header("content-type")?.hasPrefix("application/problem+json") == true, sourceLocation: sourceLocation)
    }

    @Test func photosAreCleanedResizedAndRefusedByTheRules() async throws {
        let cluster = try await Self.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let (token, _) = try EndToEndTests.register(http, "m\(RandomID.make().prefix(6))")

        // A 1600 × 1200 camera JPEG turned by EXIF orientation 6 (90° clockwise), with GPS in EXIF and XMP.
        let jpeg = MediaFiles.withMetadata(try MediaFiles.jpeg(width: 1600, height: 1200), orientation: 6)
        #expect(try MediaFiles.metadataTags(jpeg).contains { $0.contains("GPS") })
        let r = try Self.upload(http, token, jpeg, "image/jpeg")
        #expect(r.status == 201, "\(r.text)")
        let id = r.object["id"] as? String ?? ""
        #expect(id.count == 64)
        #expect(r.object["kind"] as? String == "photo")
        #expect(r.object["width"] as? Int == 1200 && r.object["height"] as? Int == 1600)
        #expect(r.object["durationMs"] is NSNull)
        #expect(r.object["url"] as? String == "/media/\(id)/1080")
        #expect(r.object["thumbnailURL"] as? String == "/media/\(id)/square320")
        let expected = ["original": (1200, 1600), "1080": (810, 1080), "640": (480, 640), "square320": (320, 320)]
        for (variant, size) in expected {
            let v = try http.request("GET", "/media/\(id)/\(variant)")
            #expect(v.status == 200, "\(variant): \(v.status)")
            #expect(v.header("content-type") == "image/jpeg")
            #expect(v.header("x-content-type-options") == "nosniff")
            #expect(v.header("cache-control") == "public, max-age=31536000, immutable")
            #expect(v.header("etag") == "\"\(id)-\(variant)\"")
            let actual = try Self.size(v.body)
            #expect(actual == size, "\(variant): \(actual)")
            let left = try MediaFiles.metadataTags(v.body)
            #expect(left.isEmpty, "\(variant) still carries \(left)")
        }
        // The same bytes again: the same id.
        #expect(try Self.upload(http, token, jpeg, "image/jpeg").object["id"] as? String == id)

        let png = try Self.upload(http, token, try MediaFiles.png(width: 400, height: 300), "image/png")
        #expect(png.status == 201 && png.object["width"] as? Int == 400 && png.object["height"] as? Int == 300, "\(png.text)")
        let pngID = png.object["id"] as? String ?? ""
        #expect(try Self.size(try http.request("GET", "/media/\(pngID)/1080").body) == (400, 300))  // never enlarged

        let heic = try Self.upload(http, token, try MediaFiles.heic(width: 640, height: 480), "image/heic")
        #expect(heic.status == 201 && heic.object["width"] as? Int == 640 && heic.object["height"] as? Int == 480, "\(heic.text)")
        let heicID = heic.object["id"] as? String ?? ""
        let heic640 = try http.request("GET", "/media/\(heicID)/640")
        let heic640Size = try Self.size(heic640.body)
        #expect(heic640.header("content-type") == "image/jpeg" && heic640Size == (640, 480))

        Self.expectProblem(
            try Self.upload(http, token, Array(jpeg.prefix(jpeg.count / 2)), "image/jpeg"), 415, "unsupported_media")
        Self.expectProblem(
            try Self.upload(http, token, MediaFiles.pngHeaderBomb(width: 60_000, height: 60_000), "image/png"), 422,
            "image_too_large")
        Self.expectProblem(
            try Self.upload(http, token, Array("just some text, named holiday.jpg\n".utf8), "image/jpeg"), 415,
            "unsupported_media")
        // A PNG declared as a JPEG: the bytes decide, and they disagree.
        Self.expectProblem(
            try Self.upload(http, token, try MediaFiles.png(width: 40, height: 30), "image/jpeg"), 415, "unsupported_media")

        // Too large by Content-Length: refused before any of the body is sent.
        Self.expectProblem(
            try http.requestHeadOnly(
                "POST", "/v1/media", token: token, headers: ["Content-Type": "image/jpeg"], contentLength: 20 * 1024 * 1024 + 1),
            413, "payload_too_large")
        Self.expectProblem(
            try http.requestHeadOnly(
                "POST", "/v1/media", token: token, headers: ["Content-Type": "video/mp4"], contentLength: 100 * 1024 * 1024 + 1),
            413, "payload_too_large")
        let unauthenticated = try http.request("POST", "/v1/media", raw: jpeg, headers: ["Content-Type": "image/jpeg"])
        #expect(unauthenticated.status == 401)
    }

    @Test func videosServePostersRangesAnd304s() async throws {
        let cluster = try await Self.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let (token, _) = try EndToEndTests.register(http, "v\(RandomID.make().prefix(6))")

        // Over 1 MiB, so the original is served in several chunks.
        var video: [UInt8] = []
        var width = 1280
        while video.count <= 1 << 20 && width <= 1920 {
            video = try MediaFiles.video(width: width, height: width * 9 / 16, seconds: 3, container: "mp4")
            width += 320
        }
        #expect(video.count > 1 << 20, "the test video is only \(video.count) bytes")
        let r = try Self.upload(http, token, video, "video/mp4")
        #expect(r.status == 201, "\(r.text)")
        let id = r.object["id"] as? String ?? ""
        #expect(r.object["kind"] as? String == "video")
        #expect(r.object["url"] as? String == "/media/\(id)/original")
        #expect(r.object["thumbnailURL"] as? String == "/media/\(id)/square320")
        let duration = r.object["durationMs"] as? Int ?? -1
        #expect((2_900...3_100).contains(duration), "durationMs \(duration)")
        let w = r.object["width"] as? Int ?? 0
        let h = r.object["height"] as? Int ?? 0

        let poster = try http.request("GET", "/media/\(id)/poster")
        #expect(poster.status == 200 && poster.header("content-type") == "image/jpeg")
        #expect(try Self.size(poster.body) == (w, h))
        #expect(try Self.size(try http.request("GET", "/media/\(id)/square320").body) == (320, 320))

        let whole = try http.request("GET", "/media/\(id)/original")
        #expect(whole.status == 200 && whole.header("content-type") == "video/mp4")
        #expect(whole.header("accept-ranges") == "bytes")
        // The stored original is the upload's streams in a new MP4 without metadata (MediaTests check
        // what is dropped), about as large, and still several chunks.
        let stored = whole.body
        #expect(whole.header("content-length") == "\(stored.count)")
        #expect(
            stored.count > 1 << 20 && abs(stored.count - video.count) < video.count / 100,
            "\(stored.count) of \(video.count) bytes")
        #expect(Array(stored[4..<8]) == Array("ftyp".utf8))
        let etag = whole.header("etag") ?? ""
        #expect(etag == "\"\(id)-original\"")

        let first = try http.request("GET", "/media/\(id)/original", headers: ["Range": "bytes=0-99"])
        #expect(first.status == 206 && first.header("content-range") == "bytes 0-99/\(stored.count)")
        #expect(first.body == Array(stored[0..<100]))
        // Across the 1 MiB chunk boundary.
        let across = try http.request("GET", "/media/\(id)/original", headers: ["Range": "bytes=1048000-1049999"])
        #expect(across.status == 206 && across.body == Array(stored[1_048_000..<1_050_000]))
        let suffix = try http.request("GET", "/media/\(id)/original", headers: ["Range": "bytes=-10"])
        #expect(suffix.status == 206 && suffix.body == Array(stored.suffix(10)))
        #expect(suffix.header("content-range") == "bytes \(stored.count - 10)-\(stored.count - 1)/\(stored.count)")
        let open = try http.request("GET", "/media/\(id)/original", headers: ["Range": "bytes=\(stored.count - 5)-"])
        #expect(open.status == 206 && open.body == Array(stored.suffix(5)))
        let outside = try http.request("GET", "/media/\(id)/original", headers: ["Range": "bytes=\(stored.count)-"])
        #expect(outside.status == 416 && outside.header("content-range") == "bytes */\(stored.count)")
        // If-Range with another entity tag: the whole file.
        let stale = try http.request(
            "GET", "/media/\(id)/original", headers: ["Range": "bytes=0-9", "If-Range": "\"other\""])
        #expect(stale.status == 200 && stale.body.count == stored.count)

        let notModified = try http.request("GET", "/media/\(id)/original", headers: ["If-None-Match": etag])
        #expect(notModified.status == 304 && notModified.body.isEmpty && notModified.header("etag") == etag)
        let head = try http.request("HEAD", "/media/\(id)/original")
        #expect(head.status == 200 && head.body.isEmpty && head.header("content-length") == "\(stored.count)")

        Self.expectProblem(try http.request("GET", "/media/\(id)/1080"), 404, "not_found")  // not a video variant
        Self.expectProblem(try http.request("GET", "/media/\(id)/bogus"), 404, "not_found")
        Self.expectProblem(try http.request("GET", "/media/\(String(repeating: "ab", count: 32))/original"), 404, "not_found")
        Self.expectProblem(try http.request("GET", "/media/not-an-id/original"), 404, "not_found")
    }

    @Test func postsUseTheirOwnersUploadsAndUnusedMediaIsCollected() async throws {
        let cluster = try await Self.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let tag = RandomID.make().prefix(6)
        let (tokenA, _) = try EndToEndTests.register(http, "p\(tag)a")
        let (tokenB, _) = try EndToEndTests.register(http, "p\(tag)b")

        let shared = try MediaFiles.jpeg(width: 500, height: 400)
        let own = try MediaFiles.jpeg(width: 520, height: 400)
        let sharedID = try Self.upload(http, tokenA, shared, "image/jpeg").object["id"] as? String ?? ""
        let ownID = try Self.upload(http, tokenA, own, "image/jpeg").object["id"] as? String ?? ""

        // B may not post A's upload.
        Self.expectProblem(
            try http.request("POST", "/v1/posts", token: tokenB, json: ["postType": "photo", "mediaId": ownID]), 404,
            "not_found")
        Self.expectProblem(
            try http.request("POST", "/v1/posts", token: tokenA, json: ["postType": "video", "mediaId": ownID]), 400,
            "invalid_field")
        let post = try http.request(
            "POST", "/v1/posts", token: tokenA, json: ["postType": "photo", "mediaId": ownID, "caption": "from an upload"])
        #expect(post.status == 201, "\(post.text)")
        #expect(post.object["mediaURL"] as? String == "/media/\(ownID)/1080")
        #expect(post.object["thumbnailURL"] as? String == "/media/\(ownID)/square320")
        let sharedPost = try http.request("POST", "/v1/posts", token: tokenA, json: ["postType": "photo", "mediaId": sharedID])
        #expect(sharedPost.status == 201)
        // B uploads the same bytes: one file, two owners.
        #expect(try Self.upload(http, tokenB, shared, "image/jpeg").object["id"] as? String == sharedID)

        // Deleting the posts: the media only A's post used is collected; B's fresh upload keeps the shared file.
        let postID = post.object["id"] as? String ?? ""
        #expect(try http.request("DELETE", "/v1/posts/\(postID)", token: tokenA).status == 204)
        Self.expectProblem(try http.request("GET", "/media/\(ownID)/1080"), 404, "not_found")
        let sharedPostID = sharedPost.object["id"] as? String ?? ""
        #expect(try http.request("DELETE", "/v1/posts/\(sharedPostID)", token: tokenA).status == 204)
        #expect(try http.request("GET", "/media/\(sharedID)/1080").status == 200)
        // A's own upload is gone for A too.
        Self.expectProblem(
            try http.request("POST", "/v1/posts", token: tokenA, json: ["postType": "photo", "mediaId": ownID]), 404,
            "not_found")
    }

    @Test func profilePhotoIsSetReplacedAndRemoved() async throws {
        let cluster = try await Self.startCluster()
        defer { cluster.stopAll() }
        let http = HTTPClient(port: cluster.gatewayPort)
        let (token, _) = try EndToEndTests.register(http, "f\(RandomID.make().prefix(6))")

        let first = try Self.upload(
            http, token, try MediaFiles.jpeg(width: 600, height: 800), "image/jpeg", path: "/v1/me/profile/photo",
            method: "PUT")
        #expect(first.status == 200, "\(first.text)")
        let firstURL = first.object["profilePhotoURL"] as? String ?? ""
        #expect(firstURL.hasPrefix("/media/") && firstURL.hasSuffix("/square320"))
        let photo = try http.request("GET", firstURL)
        let photoSize = try Self.size(photo.body)
        #expect(photo.status == 200 && photoSize == (320, 320))
        #expect(try http.request("GET", "/v1/me", token: token).object["profilePhotoURL"] as? String == firstURL)
        // The edit form sent back with the photo's path unchanged is no change (not an invalid URL).
        let edited = try http.request(
            "PATCH", "/v1/me/profile", token: token, json: ["bio": "hi", "profilePhotoURL": firstURL])
        #expect(edited.status == 200 && edited.object["profilePhotoURL"] as? String == firstURL, "\(edited.text)")
        #expect(try http.request("GET", firstURL).status == 200)

        // A video is not a profile photo.
        let video = try MediaFiles.video(width: 160, height: 120, seconds: 1, container: "mp4")
        Self.expectProblem(
            try Self.upload(http, token, video, "video/mp4", path: "/v1/me/profile/photo", method: "PUT"), 415,
            "unsupported_media")

        // Replacing it collects the first one.
        let second = try Self.upload(
            http, token, try MediaFiles.png(width: 300, height: 300), "image/png", path: "/v1/me/profile/photo",
            method: "PUT")
        let secondURL = second.object["profilePhotoURL"] as? String ?? ""
        #expect(second.status == 200 && secondURL != firstURL)
        Self.expectProblem(try http.request("GET", firstURL), 404, "not_found")

        let removed = try http.request("DELETE", "/v1/me/profile/photo", token: token)
        #expect(removed.status == 200 && removed.object["profilePhotoURL"] is NSNull, "\(removed.text)")
        Self.expectProblem(try http.request("GET", secondURL), 404, "not_found")
    }
}
