import CVips

/// Turns an upload into the variants the API serves: sniff, check limits, decode, clean, re-encode.
///
/// Photos (JPEG, PNG, WebP, HEIC) go through libvips: the header is read and a picture over
/// ``MediaLimits/maxImagePixels`` refused before decoding; then it is decoded, converted to sRGB, turned
/// upright (EXIF orientation applied to the pixels), and saved as JPEG without any metadata — no EXIF
/// (so no GPS position, camera serial or capture time), XMP, IPTC or ICC profile — as `original`, `1080`,
/// `640` and `square320` (see ``MediaVariant``). The reported width and height are those of the upright
/// `original`.
///
/// Videos (MP4, QuickTime) go through FFmpeg's libraries: the container must open and hold a decodable
/// video stream; its duration and displayed size are reported, its first frame becomes the `poster`
/// JPEG and the `square320` thumbnail, and `original` is the upload's audio and video packets copied
/// (not re-encoded) into a new container of the same kind without any of its metadata (``VideoRemuxer``):
/// an iPhone `.mov` records where it was filmed, which is the same leak as a photo's GPS position.
///
/// All work is synchronous and CPU-bound (tens to hundreds of milliseconds per photo; libvips also uses
/// its own worker threads): call it from a thread of your own, not from a task on Swift's cooperative
/// pool. Values of this type hold no state and may be used from any number of threads at once.
public struct MediaProcessor: Sendable {
    /// The pixel limit for photos and video frames; ``MediaLimits/maxImagePixels`` unless a test lowers it.
    public let maxPixels: Int

    /// Makes a processor, initialising libvips for the process on first use (see the `Vips` settings:
    /// operation cache off, untrusted loaders blocked).
    /// - Parameter maxPixels: refuse pictures with more pixels than this (default 50,000,000, API.md).
    /// - Throws: ``MediaError/processingFailed(operation:message:)`` if libvips cannot start.
    public init(maxPixels: Int = MediaLimits.maxImagePixels) throws(MediaError) {
        try Vips.start()
        self.maxPixels = maxPixels
    }

    /// Processes one upload.
    /// - Parameters:
    ///   - bytes: the uploaded file, exactly as received.
    ///   - declaredContentType: the request's `Content-Type`, if any. The type is always the sniffed one;
    ///     a declared type that names a different accepted type is refused (API.md: "a mismatch … → 415").
    ///     A missing or generic one (`application/octet-stream`) is not checked.
    /// - Returns: the id (SHA-256 of `bytes`), kind, displayed size, duration and encoded variants.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)`` (not an accepted type, mismatch, does not decode,
    ///   no video stream), ``MediaError/tooLarge(kind:bytes:limitBytes:)`` (over 20 MiB for a photo, 100 MiB
    ///   for a video), ``MediaError/imageTooLarge(width:height:limitPixels:)`` (over ``maxPixels``, refused
    ///   from the header), ``MediaError/processingFailed(operation:message:)`` (an encoder failed).
    public func process(_ bytes: [UInt8], declaredContentType: String? = nil) throws(MediaError) -> ProcessedMedia {
        let type = try Self.identify(bytes, declaredContentType: declaredContentType)
        let id = MediaID(contentOf: bytes)
        switch type.kind {
        case .photo:
            let (width, height, variants) = try bytes.withBytes { buffer throws(MediaError) in
                let loaded = try PhotoPipeline.open(buffer, type: type, maxPixels: maxPixels)
                let decoded = try PhotoPipeline.decode(loaded, type: type)
                return (decoded.width, decoded.height, try PhotoPipeline.variants(of: decoded))
            }
            return ProcessedMedia(
                id: id, sourceType: type, width: width, height: height, durationMs: nil, variants: variants)
        case .video:
            return try processVideo(bytes, type: type, id: id)
        }
    }

    /// The work of processing `bytes`, in pixels, for scheduling uploads fairly: a photo's width ×
    /// height from its header (libvips reads the header only; nothing is decoded), capped at
    /// ``MediaLimits/maxImagePixels``; a video's `videoWorkPixels` (one 4K frame: the first frame is
    /// decoded, the rest copied); 1 for bytes that are neither (they are refused at once).
    public static func workEstimate(_ bytes: [UInt8]) -> Int {
        guard let type = MediaType.sniff(bytes) else { return 1 }
        if type.kind == .video { return videoWorkPixels }
        let pixels: Int? = try? bytes.withBytes { buffer throws(MediaError) in
            let image = try PhotoPipeline.open(buffer, type: type, maxPixels: Int.max)
            let (pixels, overflow) = image.width.multipliedReportingOverflow(by: image.height)
            return overflow ? Int.max : pixels
        }
        return max(1, min(pixels ?? 1, MediaLimits.maxImagePixels))
    }

    /// The work `workEstimate` gives a video, in pixels (3840 × 2160).
    public static let videoWorkPixels = 3840 * 2160

    /// The sniffed type of `bytes`, after the declared-type and byte-size checks of ``process(_:declaredContentType:)``.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)``, ``MediaError/tooLarge(kind:bytes:limitBytes:)``.
    public static func identify(_ bytes: [UInt8], declaredContentType: String? = nil) throws(MediaError) -> MediaType {
        guard let type = MediaType.sniff(bytes) else {
            throw .unsupportedMedia(reason: "not a JPEG, PNG, WebP, HEIC, MP4 or QuickTime file")
        }
        if let declaredContentType, let declared = MediaType(contentType: declaredContentType), declared != type {
            throw .unsupportedMedia(reason: "declared as \(declared.mimeType) but the bytes are \(type.mimeType)")
        }
        let limit = MediaLimits.maxBytes(for: type.kind)
        guard bytes.count <= limit else { throw .tooLarge(kind: type.kind, bytes: bytes.count, limitBytes: limit) }
        return type
    }

    private func processVideo(_ bytes: [UInt8], type: MediaType, id: MediaID) throws(MediaError) -> ProcessedMedia {
        let probe = try bytes.withBytes { buffer throws(MediaError) in
            try VideoDecoder(bytes: buffer).probe(maxPixels: maxPixels)
        }
        let (poster, square) = try probe.frameRGB.withBytes { pixels throws(MediaError) in
            var image = try VipsImageRef.fromRGB(pixels, width: probe.codedWidth, height: probe.codedHeight)
            if probe.pixelAspect != 1 {
                let aspect = probe.pixelAspect
                image = try image.apply("vips_resize") { shim_vips_resize($0, $1, aspect, 1) }
            }
            let angle: VipsAngle? =
                switch probe.rotation {
                case 90: VIPS_ANGLE_D90
                case 180: VIPS_ANGLE_D180
                case 270: VIPS_ANGLE_D270
                default: nil
                }
            if let angle {
                image = try image.apply("vips_rot") { shim_vips_rot($0, $1, angle) }
            }
            return (
                try PhotoPipeline.encode(image, as: .poster, quality: PhotoPipeline.originalQuality),
                try PhotoPipeline.squareThumbnail(image)
            )
        }
        // The duration reported is the one stored: the copied packets' span, not the header's claim
        // (a 2 s clip whose mvhd says 10 h is 2 s).
        let (cleaned, copiedMs) = try bytes.withBytes { buffer throws(MediaError) in
            let remuxer = VideoRemuxer(bytes: buffer)
            let cleaned = try remuxer.remux(muxer: type == .quicktime ? "mov" : "mp4")
            return (cleaned, remuxer.copiedDurationMs)
        }
        let original = EncodedVariant(
            variant: .original, type: type, width: poster.width, height: poster.height, bytes: cleaned)
        return ProcessedMedia(
            id: id, sourceType: type, width: poster.width, height: poster.height, durationMs: copiedMs ?? probe.durationMs,
            variants: [original, poster, square])
    }
}
