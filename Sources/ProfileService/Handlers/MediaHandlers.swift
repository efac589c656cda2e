import BackendKit
import Media
import Messages
import Wire

/// Media: `profile.upload_media`, `profile.read_media`, `profile.set_profile_photo`,
/// `profile.clear_profile_photo`, `profile.create_media_post` (API.md "Media"). Uploads arrive in
/// the binary frame after the envelope; decoding and encoding run on `processing`, file reads on
/// `io`, never on the request loop.
struct MediaHandlers: Sendable {
    let records: any MediaRecordStore
    let users: any ProfileStore
    let posts: PostHandlers
    let files: any MediaStore
    let processor: MediaProcessor
    let processing: MediaWorkers
    let io: MediaWorkers
    let collector: MediaCollector
    let graceMs: Int64
    let releaseDelayMs: Int64
    /// Keyed uploads (`idempotencyKey`): once per user and key.
    let idempotent: IdempotentWrites

    func register(on host: ServiceHost) {
        host.onBinary(Profile.UploadMedia.self) { request, bytes, _ in
            (try await keyedUpload(request, bytes: bytes), nil)
        }
        host.onBinary(Profile.ReadMedia.self) { request, _, _ in try await read(request) }
        host.onBinary(Profile.SetProfilePhoto.self) { request, bytes, _ in
            if let bytes, (try? MediaProcessor.identify(bytes, declaredContentType: request.contentType))?.kind == .video {
                throw ServiceError(.unsupportedMedia, message: "a profile photo must be an image", status: 415)
            }
            let record = try await upload(ownerId: request.ownerId, contentType: request.contentType, bytes: bytes)
            let user = try await users.setPhoto(
                userId: request.ownerId, mediaId: record.id,
                photoURL: Profile.Media.path(id: record.id, variant: "square320"), releaseDelayMs: releaseDelayMs)
            await collector.released()
            return (user.me, nil)
        }
        host.on(Profile.ClearProfilePhoto.self) { request, _ in
            let user = try await users.setPhoto(
                userId: request.userId, mediaId: nil, photoURL: nil, releaseDelayMs: releaseDelayMs)
            await collector.released()
            return user.me
        }
        host.on(Profile.CreateMediaPost.self) { request, _ in
            try await idempotent.run(
                userId: request.ownerId, key: request.idempotencyKey,
                fingerprint: { try RequestFingerprint.of(Profile.CreateMediaPost.self, request) },
                write: { claim in try await createMediaPost(request, idempotency: claim) })
        }
    }

    /// A post from one of the owner's uploads (`profile.create_media_post`).
    /// - Throws: 404 when `mediaId` is not the owner's upload, 400 for a `postType` that is not
    ///   the media's kind, and `PostHandlers.createPost`'s errors.
    func createMediaPost(_ request: Profile.CreateMediaPost.Request, idempotency: IdempotencyClaim?) async throws
        -> Profile.Post
    {
        guard let record = try await records.owned(id: request.mediaId, ownerId: request.ownerId) else {
            throw ServiceError.notFound("media")
        }
        if ["photo", "video"].contains(request.postType), request.postType != record.kind {
            throw ServiceError.validation([
                FieldError(field: "postType", .invalidField, message: "the media is a \(record.kind)")
            ])
        }
        let media = record.media
        return try await posts.createPost(
            Profile.CreatePost.Request(
                ownerId: request.ownerId, postType: request.postType, mediaURL: media.url,
                thumbnailURL: media.thumbnailURL, caption: request.caption, taggedUsernames: request.taggedUsernames),
            mediaId: record.id, idempotency: idempotency)
    }

    /// `profile.upload_media`: `upload`, once per user and `idempotencyKey` when there is one.
    ///
    /// The upload's own write (its `media` row) commits before its files are written, so its key
    /// is recorded after the files, in a transaction of its own: a crash in between leaves no
    /// record, and the retry uploads again, which writes the same row and files (an upload is
    /// content-addressed) and gives the same `Media`. The fingerprint hashes the bytes on the I/O
    /// workers, never on the request loop.
    /// - Throws: `upload`'s errors, and `IdempotentWrites.run`'s.
    func keyedUpload(_ request: Profile.UploadMedia.Request, bytes: [UInt8]?) async throws -> Profile.Media {
        let bytes = bytes ?? []
        return try await idempotent.run(
            userId: request.ownerId, key: request.idempotencyKey,
            fingerprint: {
                let digest = try await io.run { () throws -> String in RequestFingerprint.sha256(bytes) }
                return try RequestFingerprint.of(Profile.UploadMedia.self, request, bytesDigest: digest)
            },
            write: { claim in
                let media = try await upload(ownerId: request.ownerId, contentType: request.contentType, bytes: bytes).media
                if let claim { try await idempotent.store.save(claim, reply: try IdempotencyClaim.text(media)) }
                return media
            })
    }

    /// Sniffs, checks, decodes and re-encodes the upload (off the request loop), records it for
    /// `ownerId`, then writes its files; a repeated upload reuses them.
    /// - Throws: 400 without bytes; 415, 413, 422 from the Media library (`ServiceError(MediaError)`).
    func upload(ownerId: String, contentType: String?, bytes: [UInt8]?) async throws -> MediaRecord {
        guard let bytes, !bytes.isEmpty else {
            throw ServiceError(.unsupportedMedia, message: "the upload is empty", status: 415)
        }
        let processor = self.processor
        let processed: ProcessedMedia
        do {
            // Fair across uploaders, weighed by pixels (the header's, read without decoding).
            let cost = MediaProcessor.workEstimate(bytes)
            processed = try await processing.run(owner: ownerId, cost: cost) { () throws -> ProcessedMedia in
                try processor.process(bytes, declaredContentType: contentType)
            }
        } catch let error as MediaError {
            throw ServiceError(error)
        }
        let record = MediaRecord(
            id: processed.id.hex, ownerId: ownerId, kind: processed.kind.rawValue, width: processed.width,
            height: processed.height, durationMs: processed.durationMs, createdAt: Timestamp.now())
        // The row first: from now on the collector leaves this id's files alone.
        try await records.claim(record, nowMs: Timestamp.nowMs(), graceMs: graceMs)
        let files = self.files
        do {
            try await io.run { () throws in try files.put(processed) }
        } catch {
            try? await records.unclaim(id: record.id, ownerId: ownerId)
            if let error = error as? MediaError { throw ServiceError(error) }
            throw error
        }
        return record
    }

    /// Metadata and up to `ReadMedia.maxChunkBytes` of one variant.
    /// - Throws: 404 for an unknown id or variant, 416-free: an offset past the end gives no bytes.
    func read(_ request: Profile.ReadMedia.Request) async throws -> (Profile.ReadMedia.Reply, [UInt8]?) {
        guard let id = MediaID(request.id), let variant = MediaVariant(rawValue: request.variant) else {
            throw ServiceError.notFound("media")
        }
        // A suspended or deleted account's uploads are gone to everyone at once.
        guard try await records.isShown(id: id.hex) else { throw ServiceError.notFound("media") }
        let offset = max(0, request.offset)
        let length = min(max(0, request.length), Profile.ReadMedia.maxChunkBytes)
        let files = self.files
        let found = try await io.run { () throws -> (Profile.ReadMedia.Reply, [UInt8])? in
            guard let file = try files.open(id, variant) else { return nil }
            let end = min(file.size, offset + length)
            let bytes = length == 0 || offset >= end ? [] : try file.read(offset..<end)
            return (Profile.ReadMedia.Reply(size: file.size, contentType: file.contentType, etag: file.etag), bytes)
        }
        guard let (reply, bytes) = found else { throw ServiceError.notFound("media") }
        return (reply, bytes)
    }
}
