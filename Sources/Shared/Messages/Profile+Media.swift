extension Profile {
    /// An uploaded photo or video as the API shows it (API.md "Media" `Media`).
    public struct Media: Codable, Sendable, Equatable {
        /// The SHA-256 of the uploaded bytes, 64 lowercase hex digits.
        public var id: String
        /// `photo` or `video`.
        public var kind: String
        /// The `1080` variant (video: `original`), a path relative to the API's base URL
        /// (`/media/{id}/{variant}`).
        public var url: String
        /// `square320` (video: made from the poster frame), relative like `url`.
        public var thumbnailURL: String
        /// The upright original's width, in pixels.
        public var width: Int
        /// The upright original's height, in pixels.
        public var height: Int
        /// A video's duration in ms; nil for a photo.
        public var durationMs: Int?
        public init(id: String, kind: String, url: String, thumbnailURL: String, width: Int, height: Int, durationMs: Int?) {
            self.id = id
            self.kind = kind
            self.url = url
            self.thumbnailURL = thumbnailURL
            self.width = width
            self.height = height
            self.durationMs = durationMs
        }

        /// The path a variant is served at: `/media/{id}/{variant}`.
        public static func path(id: String, variant: String) -> String { "/media/\(id)/\(variant)" }
    }

    /// Stores an upload: the raw bytes travel in the binary frame after the envelope (none:
    /// 400). Errors: 415 `unsupported_media`, 413 `payload_too_large`, 422 `image_too_large`;
    /// with an `idempotencyKey`, 422 `idempotency_key_reused`, 409 `idempotency_key_in_use`.
    public enum UploadMedia: RPC {
        public static let type = "profile.upload_media"
        /// Not retried after a lost peer (the bytes are large and the client may upload again),
        /// unless the request carries an `idempotencyKey`: the gateway then marks the call retryable.
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            /// The uploader (the gateway's authenticated caller).
            public var ownerId: String
            /// The `Content-Type` the client declared (a named type must match the bytes).
            public var contentType: String?
            /// The caller's `Idempotency-Key` (`IdempotencyKey`), nil without one, as for
            /// `CreatePost`; the request it stands for is this one with the bytes. Ignored by
            /// `SetProfilePhoto` (a PUT: doing it twice leaves the same state). Absent on the wire
            /// when nil.
            public var idempotencyKey: String?
            public init(ownerId: String, contentType: String?, idempotencyKey: String? = nil) {
                self.ownerId = ownerId
                self.contentType = contentType
                self.idempotencyKey = idempotencyKey
            }
        }
        public typealias Reply = Media
    }

    /// Reads part of a stored variant: at most `length` bytes from `offset` come back in the
    /// binary frame after the reply (the gateway asks chunk by chunk, so a 100 MiB video is never
    /// held whole). `length` 0 asks for the metadata only. Errors: 404 for an unknown id or a
    /// variant the media does not have.
    public enum ReadMedia: RPC {
        public static let type = "profile.read_media"
        public static let isIdempotent = true
        /// The most bytes one reply carries (1 MiB).
        public static let maxChunkBytes = 1 << 20
        public struct Request: Codable, Sendable {
            /// The media id (64 lowercase hex digits); anything else is 404.
            public var id: String
            /// `original`, `1080`, `640`, `square320` or `poster`.
            public var variant: String
            /// Byte offset into the file.
            public var offset: Int
            /// Bytes wanted (capped at `maxChunkBytes`, and at the file's end).
            public var length: Int
            public init(id: String, variant: String, offset: Int, length: Int) {
                self.id = id
                self.variant = variant
                self.offset = offset
                self.length = length
            }
        }
        /// What the variant is; its bytes follow in the binary frame.
        public struct Reply: Codable, Sendable {
            /// The whole file's size, in bytes.
            public var size: Int
            /// e.g. `image/jpeg`, `video/mp4`.
            public var contentType: String
            /// The strong entity tag (RFC 9110 §8.8.3), quotes included: `"<id>-<variant>"`.
            public var etag: String
            public init(size: Int, contentType: String, etag: String) {
                self.size = size
                self.contentType = contentType
                self.etag = etag
            }
        }
    }

    /// Makes an upload the caller's profile photo: raw image bytes in the binary frame, as for
    /// `UploadMedia` (videos are refused with 415). Errors: those of `UploadMedia`, 404.
    public enum SetProfilePhoto: RPC {
        public static let type = "profile.set_profile_photo"
        public static let isIdempotent = false
        public typealias Request = UploadMedia.Request
        public typealias Reply = Me
    }

    /// Removes the caller's profile photo. Errors: 404.
    public enum ClearProfilePhoto: RPC {
        public static let type = "profile.clear_profile_photo"
        public static let isIdempotent = true
        public typealias Request = GetMe.Request
        public typealias Reply = Me
    }

    /// Creates a post from one of the owner's own uploads: `mediaURL` and `thumbnailURL` come from
    /// its variants. Errors: 404 `not_found` when `mediaId` is not an upload of `ownerId`'s, 400 as
    /// `CreatePost` (and `postType` not matching the media's kind); with an `idempotencyKey`, those
    /// of `CreatePost`'s key.
    public enum CreateMediaPost: RPC {
        public static let type = "profile.create_media_post"
        public static let isIdempotent = false
        public struct Request: Codable, Sendable {
            /// The caller, who must have uploaded `mediaId`.
            public var ownerId: String
            /// `photo` or `video`, matching the upload's kind.
            public var postType: String
            /// A `Media.id` the caller uploaded.
            public var mediaId: String
            /// Up to 2,200 characters; nil for none.
            public var caption: String?
            /// Users to tag, as typed (at most 20).
            public var taggedUsernames: [String]
            /// The caller's `Idempotency-Key` (`IdempotencyKey`), nil without one: a repeat with
            /// the same key within 24 h gets the first reply and stores nothing, a different
            /// request with it is 422 `idempotency_key_reused`, one while the first is being
            /// processed 409 `idempotency_key_in_use`. Absent on the wire when nil.
            public var idempotencyKey: String?
            public init(
                ownerId: String, postType: String, mediaId: String, caption: String?, taggedUsernames: [String],
                idempotencyKey: String? = nil
            ) {
                self.ownerId = ownerId
                self.postType = postType
                self.mediaId = mediaId
                self.caption = caption
                self.taggedUsernames = taggedUsernames
                self.idempotencyKey = idempotencyKey
            }
        }
        public typealias Reply = Post
    }
}
