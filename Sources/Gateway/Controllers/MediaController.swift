import Foundation
import Messages
import Support
import Wire

/// Uploads and serving (API.md "Media"; ProfileService keeps the files): `POST /v1/media`,
/// `PUT|DELETE /v1/me/profile/photo`, `GET|HEAD /media/{id}/{variant}`.
///
/// An upload's body is raw bytes, refused with 413 from its `Content-Length` before it is read
/// (20 MiB for a declared `image/*`, 100 MiB otherwise), held once, and sent to ProfileService
/// as the binary frame after the request's envelope. Media is served from ProfileService in
/// chunks of at most `Profile.ReadMedia.maxChunkBytes`, one at a time per connection, each asked
/// for only when the previous one has been written and the server's response budget has room.
struct MediaController: Controller {
    let profile: any ServiceBackend

    /// Largest photo upload, in bytes (20 MiB; `MediaLimits.maxPhotoBytes`).
    static let maxPhotoBytes = 20 << 20
    /// Largest upload of any kind, in bytes (100 MiB; `MediaLimits.maxUploadBytes`).
    static let maxUploadBytes = 100 << 20
    /// An upload's deadline in ms: decoding a 12 MP HEIC takes most of a second, more when others
    /// wait for the same workers.
    static let uploadTimeoutMs = 30_000
    /// How often one chunk of a body is asked for before the body is given up (with back-off
    /// from 50 ms doubling to 2 s between tries: about 5 s of waiting, plus each try's deadline).
    static let chunkReadAttempts = 8
    /// `Cache-Control` of every variant: its bytes never change (RFC 8246 `immutable`).
    static let cacheControl = "public, max-age=31536000, immutable"

    /// The body limit of a profile photo, whatever is declared.
    static func photoLimit(_ headers: HTTPHeaders) -> Int { maxPhotoBytes }

    /// The body limit for a declared `Content-Type`: photos' for `image/*`, else the overall one
    /// (ProfileService sniffs the bytes and applies the limit of what they are).
    static func uploadLimit(_ headers: HTTPHeaders) -> Int {
        let type = headers["content-type"]?.lowercased().trimmingOptionalWhitespace() ?? ""
        return type.hasPrefix("image/") ? maxPhotoBytes : maxUploadBytes
    }

    func register(_ routes: inout RouteCollection) {
        // With an `Idempotency-Key`, ProfileService answers a repeat (the same bytes and type)
        // with the first upload's `Media`, so the call may be sent again after a lost connection.
        routes.add(.post, "/v1/media", body: .raw(maxBytes: Self.uploadLimit)) { request in
            let key = try request.idempotencyKey()
            let (media, _) = try await profile.call(
                Profile.UploadMedia.self,
                .init(ownerId: try request.userId, contentType: request.http.header("content-type"), idempotencyKey: key),
                binary: request.http.body, timeoutMs: Self.uploadTimeoutMs, idempotent: key != nil)
            return try .json(201, media)
        }
        routes.add(.put, "/v1/me/profile/photo", body: .raw(maxBytes: Self.photoLimit)) { request in
            let (me, _) = try await profile.call(
                Profile.SetProfilePhoto.self,
                .init(ownerId: try request.userId, contentType: request.http.header("content-type")),
                binary: request.http.body, timeoutMs: Self.uploadTimeoutMs)
            return try .json(me)
        }
        routes.add(.delete, "/v1/me/profile/photo") { request in
            try .json(try await profile.call(Profile.ClearProfilePhoto.self, .init(userId: try request.userId)))
        }
        routes.add(.get, "/media/{id}/{variant}", authenticated: false) { try await serve($0) }
    }

    /// `GET|HEAD /media/{id}/{variant}`: the variant with a strong `ETag`, immutable caching, 304
    /// on a matching `If-None-Match` (RFC 9110 §13.1.2), one byte range (§14: 206 with
    /// `Content-Range`, 416 with `Content-Range: bytes */size`; `If-Range` honoured), nosniff.
    /// - Throws: 404 problem for an unknown id or variant.
    func serve(_ request: Request) async throws -> HTTPResponse {
        let id = try request.parameters.require("id")
        let variant = try request.parameters.require("variant")
        guard id.utf8.count == 64, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw Problem.notFound("no media \(id)")
        }
        let (meta, _) = try await profile.call(
            Profile.ReadMedia.self, .init(id: id, variant: variant, offset: 0, length: 0), binary: nil)
        var headers: [(String, String)] = [
            ("ETag", meta.etag), ("Cache-Control", Self.cacheControl), ("X-Content-Type-Options", "nosniff"),
        ]
        if let tags = request.http.header("if-none-match"), Self.matches(tags, meta.etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers += [("Content-Type", meta.contentType), ("Accept-Ranges", "bytes")]
        var range = 0..<meta.size
        var status = 200
        if let header = request.http.header("range"),
            request.http.header("if-range").map({ $0.trimmingOptionalWhitespace() == meta.etag }) ?? true
        {
            switch ByteRange.parse(header, size: meta.size) {
            case .ignored: break
            case .unsatisfiable:
                var p = Problem(status: 416, code: .rangeNotSatisfiable, detail: "the range is outside the \(meta.size) bytes")
                p.extraHeaders += [("Content-Range", "bytes */\(meta.size)")]
                return p.response
            case .range(let r):
                range = r
                status = 206
                headers.append(("Content-Range", "bytes \(r.lowerBound)-\(r.upperBound - 1)/\(meta.size)"))
            }
        }
        let chunk = Profile.ReadMedia.maxChunkBytes
        let served = range
        if request.http.method == .head || served.isEmpty {
            var response = HTTPResponse(status: status, headers: headers)
            response.body = .source(BodySource(length: served.count, next: { nil }))
            return response
        }
        let profile = self.profile
        // A chunk read that times out or finds ProfileService unavailable is tried again (it is
        // an idempotent read): once a 200 has promised its length, the body must not end short.
        @Sendable func read(_ offset: Int) async throws -> [UInt8] {
            let length = min(chunk, served.upperBound - offset)
            var delayMs = 50
            var attempt = 1
            while true {
                do {
                    let (_, bytes) = try await profile.call(
                        Profile.ReadMedia.self, .init(id: id, variant: variant, offset: offset, length: length), binary: nil)
                    guard let bytes, bytes.count == length else { throw Problem.internalError() }
                    return bytes
                } catch let error as ServiceError where error.status == 503 || error.status == 504 {
                    guard attempt < Self.chunkReadAttempts else { throw error }
                    try await Task.sleep(for: .milliseconds(delayMs))
                    delayMs = min(delayMs * 2, 2_000)
                    attempt += 1
                }
            }
        }
        // Even a one-chunk body is read by the server, not here: it asks only when the response
        // budget has room, and sends the head only once the first chunk is in.
        let next = Locked(served.lowerBound)
        var response = HTTPResponse(status: status, headers: headers)
        response.body = .source(
            BodySource(length: served.count, chunkLimit: chunk) {
                let offset = next.withLock { $0 }
                guard offset < served.upperBound else { return nil }
                let bytes = try await read(offset)
                next.withLock { $0 = offset + bytes.count }
                return bytes
            })
        return response
    }

    /// Whether an `If-None-Match` list names `etag` (weak comparison, RFC 9110 §13.1.2) or is `*`.
    static func matches(_ list: String, _ etag: String) -> Bool {
        let tags = list.split(separator: ",").map { $0.trimmingOptionalWhitespace() }
        return tags.contains { $0 == "*" || $0 == etag || $0 == "W/\(etag)" }
    }
}
