/// Why an upload was refused or could not be processed or stored.
///
/// Each case names the HTTP status and problem `code` it stands for (API.md, "Media" and
/// "Conventions"), so the gateway can answer without knowing the cases: see ``httpStatus`` and ``code``.
public enum MediaError: Error, Sendable, Equatable {
    /// The bytes are not one of the accepted types, do not match the declared `Content-Type`, or do not
    /// decode (truncated, corrupt, no video stream). HTTP 415 `unsupported_media`.
    case unsupportedMedia(reason: String)
    /// The upload is over the byte limit for its kind (``MediaLimits/maxPhotoBytes``,
    /// ``MediaLimits/maxVideoBytes``). HTTP 413 `payload_too_large`.
    case tooLarge(kind: MediaKind, bytes: Int, limitBytes: Int)
    /// The header declares more pixels than ``MediaLimits/maxImagePixels`` (a decompression bomb or simply
    /// too big); nothing was decoded. Width and height in pixels. HTTP 422 `image_too_large`.
    case imageTooLarge(width: Int, height: Int, limitPixels: Int)
    /// libvips or FFmpeg failed on an input that had decoded (an encoder or resize failure): a server
    /// fault, HTTP 500 `internal`. `message` is the library's own text.
    case processingFailed(operation: String, message: String)
    /// A file-system call of the store failed: HTTP 500 `internal`. `errno` is the POSIX error number.
    case storage(operation: String, path: String, errno: Int32)

    /// The HTTP status this error maps to (API.md): 415, 413, 422 or 500.
    public var httpStatus: Int {
        switch self {
        case .unsupportedMedia: 415
        case .tooLarge: 413
        case .imageTooLarge: 422
        case .processingFailed, .storage: 500
        }
    }

    /// The problem-details `code` (API.md): `unsupported_media`, `payload_too_large`, `image_too_large`
    /// or `internal`.
    public var code: String {
        switch self {
        case .unsupportedMedia: "unsupported_media"
        case .tooLarge: "payload_too_large"
        case .imageTooLarge: "image_too_large"
        case .processingFailed, .storage: "internal"
        }
    }

    /// A human-readable sentence for the problem's `detail` (never the library's internals for 500s).
    public var detail: String {
        switch self {
        case .unsupportedMedia(let reason): "unsupported media: \(reason)"
        case .tooLarge(let kind, let bytes, let limit): "the \(kind.rawValue) is \(bytes) bytes, over the limit of \(limit) bytes"
        case .imageTooLarge(let width, let height, let limit):
            "the image is \(width)×\(height) pixels, over the limit of \(limit) pixels"
        case .processingFailed, .storage: "the media could not be processed"
        }
    }
}
