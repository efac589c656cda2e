/// A stored rendition of one upload: the `{variant}` of `GET /media/{id}/{variant}` (API.md, "Media").
///
/// Photos have `original`, `1080`, `640` and `square320`; videos have `original`, `poster` and
/// `square320` (from the poster frame).
public enum MediaVariant: String, Sendable, Codable, CaseIterable {
    /// Photo: re-encoded at full size, orientation applied, metadata stripped. Video: the uploaded bytes.
    case original
    /// Photo: the longest side at most 1,080 pixels (never upscaled). The `Media.url` of a photo.
    case long1080 = "1080"
    /// Photo: the longest side at most 640 pixels (never upscaled).
    case long640 = "640"
    /// 320 × 320 pixels, the centre of the (oriented) picture cropped to a square: the grid thumbnail,
    /// `Media.thumbnailURL`. Smaller pictures are enlarged to fill it, so the grid is uniform.
    case square320
    /// Video only: a frame of the video, full size, as JPEG.
    case poster

    /// The variants a kind of media has, in the order they are produced.
    public static func variants(of kind: MediaKind) -> [MediaVariant] {
        switch kind {
        case .photo: [.original, .long1080, .long640, .square320]
        case .video: [.original, .poster, .square320]
        }
    }

    /// The longest side of `long1080` and `long640`, and the side of `square320`, in pixels; nil for the others.
    public var boundingSide: Int? {
        switch self {
        case .long1080: 1080
        case .long640: 640
        case .square320: 320
        case .original, .poster: nil
        }
    }
}

/// One encoded variant, ready to store.
public struct EncodedVariant: Sendable {
    /// Which variant this is.
    public let variant: MediaVariant
    /// The type of ``bytes``, sniffed on the way out too: ``MediaType/jpeg`` for every image variant, the
    /// sniffed upload type for a video's `original`.
    public let type: MediaType
    /// Width in pixels (for a video's `original`: the displayed width, rotation and pixel aspect applied).
    public let width: Int
    /// Height in pixels (as ``width``).
    public let height: Int
    /// The file's bytes.
    public let bytes: [UInt8]

    /// The `Content-Type` to serve it with, e.g. `image/jpeg`.
    public var contentType: String { type.mimeType }
}

/// The result of ``MediaProcessor/process(_:declaredContentType:)``: what API.md's `Media` reply needs
/// (kind, width, height, duration) and the variants to store.
public struct ProcessedMedia: Sendable {
    /// The content address: SHA-256 of the uploaded bytes (see ``MediaID``).
    public let id: MediaID
    /// The type sniffed from the uploaded bytes.
    public let sourceType: MediaType
    /// Width in pixels of the picture as displayed (EXIF orientation applied; for video, the track's
    /// rotation and pixel aspect ratio applied): `Media.width`.
    public let width: Int
    /// Height in pixels, as ``width``: `Media.height`.
    public let height: Int
    /// Video duration in milliseconds (`Media.durationMs`); nil for photos, and for a video whose container
    /// states no duration.
    public let durationMs: Int?
    /// Every variant of ``kind``, in ``MediaVariant/variants(of:)`` order.
    public let variants: [EncodedVariant]

    /// Photo or video.
    public var kind: MediaKind { sourceType.kind }

    /// The named variant, or nil if this kind has none of that name.
    public func variant(_ variant: MediaVariant) -> EncodedVariant? {
        variants.first { $0.variant == variant }
    }
}
