/// The upload limits of API.md's "Media" section (`POST /v1/media`), in one place.
public enum MediaLimits {
    /// 20 MiB (20 × 1,048,576 bytes): the largest photo upload. API.md, "Media": "over 20 MiB (photos) … → 413".
    public static let maxPhotoBytes = 20 * 1024 * 1024
    /// 100 MiB (100 × 1,048,576 bytes): the largest video upload. API.md, "Media": "over … 100 MiB (videos) → 413".
    public static let maxVideoBytes = 100 * 1024 * 1024
    /// The largest body `POST /v1/media` can ever accept, in bytes (the video limit): what the gateway
    /// refuses with 413 from `Content-Length` before reading a body whose kind it does not know yet.
    public static let maxUploadBytes = maxVideoBytes
    /// 50 megapixels (50,000,000 pixels, decimal mega): the largest image, and the largest video frame,
    /// checked from the header before any pixel is decoded. API.md, "Media": "over 50 megapixels → 422
    /// `image_too_large`". At 3 bytes a pixel a decoded image stays under 150 MB.
    public static let maxImagePixels = 50_000_000

    /// The byte limit for uploads of `kind`: ``maxPhotoBytes`` or ``maxVideoBytes``.
    public static func maxBytes(for kind: MediaKind) -> Int {
        switch kind {
        case .photo: maxPhotoBytes
        case .video: maxVideoBytes
        }
    }
}
