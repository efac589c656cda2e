import CVips

/// Photos through libvips: header check, decode, sRGB, orientation, and the four JPEG variants.
///
/// Output is JPEG for every variant, whatever came in: it is what the app and every client decode
/// natively and cheaply (iOS, Android, browsers, image caches), libjpeg-turbo encodes it in milliseconds,
/// and it cannot carry animation or hidden extra images. HEIC would need HEVC encoding (slow, and not
/// displayable by most browsers); WebP and AVIF are smaller but not what the app expects. Transparency is
/// flattened onto white (JPEG has no alpha).
enum PhotoPipeline {
    /// JPEG quality (libjpeg scale 1...100) of `original`: high enough that re-encoding a camera JPEG
    /// (typically quality 90–95) adds no visible loss, while dropping the camera's extra bytes.
    static let originalQuality = 85
    /// JPEG quality of `1080` and `640`, the sizes the app displays (a common choice for feed images;
    /// chroma is subsampled 4:2:0, libvips's default below quality 90).
    static let displayQuality = 82
    /// JPEG quality of `square320`, the grid thumbnail.
    static let thumbnailQuality = 80

    /// The decoded picture, oriented, in 8-bit sRGB without alpha.
    struct Decoded {
        let image: VipsImageRef
        var width: Int { image.width }
        var height: Int { image.height }
    }

    /// Opens `bytes` with the loader of `type` (header only) and refuses a picture over `maxPixels`
    /// before any pixel is decoded.
    /// - Parameter bytes: must stay valid as long as the returned image and any image made from it.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)`` if the header does not parse,
    ///   ``MediaError/imageTooLarge(width:height:limitPixels:)`` over the limit.
    static func open(_ bytes: UnsafeRawBufferPointer, type: MediaType, maxPixels: Int) throws(MediaError) -> VipsImageRef {
        try Vips.start()
        let loader: (UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32
        switch type {
        case .jpeg: loader = { shim_vips_jpegload_buffer($0, $1, $2, VIPS_ACCESS_SEQUENTIAL, VIPS_FAIL_ON_ERROR) }
        case .png: loader = { shim_vips_pngload_buffer($0, $1, $2, VIPS_ACCESS_SEQUENTIAL, VIPS_FAIL_ON_ERROR) }
        case .webp: loader = { shim_vips_webpload_buffer($0, $1, $2, VIPS_ACCESS_SEQUENTIAL, VIPS_FAIL_ON_ERROR) }
        case .heic: loader = { shim_vips_heifload_buffer($0, $1, $2, VIPS_ACCESS_SEQUENTIAL, VIPS_FAIL_ON_ERROR) }
        case .mp4, .quicktime: throw .unsupportedMedia(reason: "a \(type.rawValue) is not a photo")
        }
        var out: UnsafeMutablePointer<VipsImage>?
        // libvips reads the buffer in place and never writes to it: the mutable pointer is its API's spelling.
        guard loader(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count, &out) == 0, let out else {
            throw .unsupportedMedia(reason: "the \(type.rawValue) header does not parse (\(Vips.takeError()))")
        }
        let image = VipsImageRef(taking: out)
        let (width, height) = (image.width, image.height)
        guard width > 0, height > 0 else { throw .unsupportedMedia(reason: "the \(type.rawValue) has no pixels") }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || pixels > maxPixels {
            throw .imageTooLarge(width: width, height: height, limitPixels: maxPixels)
        }
        return image
    }

    /// Decodes `loaded` (from ``open(_:type:maxPixels:)``) into memory as 8-bit sRGB without alpha, then
    /// applies the EXIF orientation to the pixels (`vips_autorot`, which also drops the tag).
    ///
    /// Colour: an embedded ICC profile (a Display P3 iPhone photo, a CMYK JPEG) is used to convert the
    /// pixels to sRGB, because the saved files carry no profile and untagged images are shown as sRGB;
    /// without a profile, libvips's own conversion from the image's interpretation (greyscale, 16-bit,
    /// CMYK) is used. An unusable embedded profile falls back to the latter.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)`` when the pixels do not decode (truncated or
    ///   corrupt data), ``MediaError/processingFailed(operation:message:)`` for other libvips failures.
    static func decode(_ loaded: VipsImageRef, type: MediaType) throws(MediaError) -> Decoded {
        var image = loaded
        var profiled: VipsImageRef?
        if image.hasField("icc-profile-data") {
            // An unusable profile (libvips's error is taken and dropped by `apply`) falls back to the below.
            profiled = try? image.apply("vips_icc_transform") { shim_vips_icc_transform_embedded_to_srgb($0, $1) }
        }
        if let profiled {
            image = profiled
        } else if image.interpretation != VIPS_INTERPRETATION_sRGB || image.format != VIPS_FORMAT_UCHAR {
            image = try image.apply("vips_colourspace") { shim_vips_colourspace($0, $1, VIPS_INTERPRETATION_sRGB) }
        }
        if image.hasAlpha {
            image = try image.apply("vips_flatten") { shim_vips_flatten($0, $1, 255) }
        }
        if image.format != VIPS_FORMAT_UCHAR {
            image = try image.apply("vips_cast") { shim_vips_cast($0, $1, VIPS_FORMAT_UCHAR) }
        }
        if image.bands > 3 {
            image = try image.apply("vips_extract_band") { shim_vips_extract_band($0, $1, 0, 3) }
        }
        let decoded: VipsImageRef
        do {
            decoded = try image.copyToMemory()
        } catch {
            if case .processingFailed(_, let message) = error {
                throw .unsupportedMedia(reason: "the \(type.rawValue) does not decode (\(message))")
            }
            throw error
        }
        let oriented = try decoded.apply("vips_autorot") { shim_vips_autorot($0, $1) }
        return Decoded(image: oriented)
    }

    /// Encodes the photo variants of `decoded`: `original`, `1080`, `640`, `square320` (see ``MediaVariant``).
    static func variants(of decoded: Decoded) throws(MediaError) -> [EncodedVariant] {
        let image = decoded.image
        var out: [EncodedVariant] = [try encode(image, as: .original, quality: originalQuality)]
        for variant in [MediaVariant.long1080, .long640] {
            let side = Int32(variant.boundingSide!)
            let resized = try image.apply("vips_thumbnail_image") {
                shim_vips_thumbnail_image($0, $1, side, side, VIPS_SIZE_DOWN, VIPS_INTERESTING_NONE)
            }
            out.append(try encode(resized, as: variant, quality: displayQuality))
        }
        out.append(try squareThumbnail(image))
        return out
    }

    /// The `square320` variant: the centre of `image` scaled to cover 320 × 320 pixels and cropped.
    static func squareThumbnail(_ image: VipsImageRef) throws(MediaError) -> EncodedVariant {
        let side = Int32(MediaVariant.square320.boundingSide!)
        let square = try image.apply("vips_thumbnail_image") {
            shim_vips_thumbnail_image($0, $1, side, side, VIPS_SIZE_BOTH, VIPS_INTERESTING_CENTRE)
        }
        return try encode(square, as: .square320, quality: thumbnailQuality)
    }

    /// Encodes `image` as a stripped JPEG (no EXIF, XMP, IPTC or ICC block).
    static func encode(_ image: VipsImageRef, as variant: MediaVariant, quality: Int) throws(MediaError) -> EncodedVariant {
        EncodedVariant(
            variant: variant, type: .jpeg, width: image.width, height: image.height, bytes: try image.jpeg(quality: quality))
    }
}
