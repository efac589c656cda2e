/// Photo or video: the `kind` field of API.md's `Media` shape.
public enum MediaKind: String, Sendable, Codable, CaseIterable {
    /// A still image: JPEG, PNG, WebP or HEIC upload, stored as JPEG variants.
    case photo
    /// An MP4 or QuickTime upload, stored as uploaded with a poster frame.
    case video
}

/// An accepted upload type, as sniffed from the bytes (never from a `Content-Type` header or a file name).
public enum MediaType: String, Sendable, Codable, CaseIterable {
    /// JPEG (ITU T.81 / JFIF, EXIF).
    case jpeg
    /// PNG (RFC 2083).
    case png
    /// WebP, lossy or lossless (RFC 9649); an animated one is read as its first frame.
    case webp
    /// HEIC, and HEIF stills in general (ISO/IEC 23008-12): the iPhone's camera default.
    case heic
    /// MPEG-4 Part 14 (ISO base media file format with an MP4 brand).
    case mp4
    /// Apple QuickTime (`ftyp` brand `qt  `): the iPhone's video default.
    case quicktime

    /// The MIME type the API names for this type (API.md, `POST /v1/media`).
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .webp: "image/webp"
        case .heic: "image/heic"
        case .mp4: "video/mp4"
        case .quicktime: "video/quicktime"
        }
    }

    /// Photo for the four image types, video for MP4 and QuickTime.
    public var kind: MediaKind {
        switch self {
        case .jpeg, .png, .webp, .heic: .photo
        case .mp4, .quicktime: .video
        }
    }

    /// The type a `Content-Type` header value names, or nil if it names none of the accepted ones.
    /// Parameters (`; charset=…`) and case are ignored; `image/jpg` and `image/heif` are accepted as aliases.
    public init?(contentType: String) {
        let essence = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        switch essence.trimmingSpaces().lowercased() {
        case "image/jpeg", "image/jpg": self = .jpeg
        case "image/png": self = .png
        case "image/webp": self = .webp
        case "image/heic", "image/heif": self = .heic
        case "video/mp4": self = .mp4
        case "video/quicktime": self = .quicktime
        default: return nil
        }
    }

    /// Sniffs the type from the first bytes of a file (magic numbers; for the ISO base media file format,
    /// the `ftyp` box's brands). Returns nil for anything else, including AVIF and audio-only MP4 brands.
    ///
    /// Signatures: JPEG `FF D8 FF` (ITU T.81 SOI marker and the next marker); PNG's 8-byte signature
    /// (RFC 2083 §3.1); WebP `RIFF····WEBP` (RFC 9649 §2); HEIF/MP4/QuickTime: a box of type `ftyp` first
    /// (ISO/IEC 14496-12 §4.3) whose major or compatible brands name the type.
    /// - Parameter bytes: the file's bytes; only the first 4 KiB are looked at.
    public static func sniff(_ bytes: some Collection<UInt8>) -> MediaType? {
        let head = Array(bytes.prefix(4096))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.count >= 12, head[0..<4].elementsEqual(Array("RIFF".utf8)), head[8..<12].elementsEqual(Array("WEBP".utf8)) {
            return .webp
        }
        return sniffISOBaseMedia(head)
    }

    /// Brands (ISO/IEC 23008-12 Annex B, ISO/IEC 14496-14, Apple's QuickTime File Format).
    private static let heicBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs"]
    private static let heifGenericBrands: Set<String> = ["mif1", "msf1"]
    private static let mp4Brands: Set<String> = [
        "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "mp41", "mp42", "avc1", "M4V ", "M4VH", "M4VP", "mmp4", "dash",
        "3gp4", "3gp5", "3gp6", "3g2a", "MSNV", "XAVC",
    ]

    private static func sniffISOBaseMedia(_ head: [UInt8]) -> MediaType? {
        guard head.count >= 16, head[4..<8].elementsEqual(Array("ftyp".utf8)) else { return nil }
        let boxSize = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
        guard boxSize >= 16, boxSize % 4 == 0 else { return nil }
        func brand(at offset: Int) -> String { String(decoding: head[offset..<offset + 4], as: UTF8.self) }
        let major = brand(at: 8)
        var compatible: [String] = []
        var offset = 16
        while offset + 4 <= min(boxSize, head.count) {
            compatible.append(brand(at: offset))
            offset += 4
        }
        if heicBrands.contains(major) { return .heic }
        if major == "qt  " { return .quicktime }
        if mp4Brands.contains(major) { return .mp4 }
        if heifGenericBrands.contains(major) {
            // A generic HEIF file: HEIC only if it says so; AVIF (also `mif1`) is not an accepted type.
            return compatible.contains(where: heicBrands.contains) ? .heic : nil
        }
        if compatible.contains("qt  ") { return .quicktime }
        if compatible.contains(where: mp4Brands.contains) { return .mp4 }
        return nil
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
