import CVips
import Foundation
import TestSupport
import Testing

@testable import Media

/// Photos through `MediaProcessor`: variants and their sizes, metadata gone, orientation applied, bombs
/// and broken files refused.
struct PhotoTests {
    let processor: MediaProcessor

    init() throws {
        processor = try MediaProcessor()
    }

    func sizes(_ media: ProcessedMedia) -> [MediaVariant: [Int]] {
        Dictionary(uniqueKeysWithValues: media.variants.map { ($0.variant, [$0.width, $0.height]) })
    }

    /// The variants' sizes are those of the files themselves.
    func expectSizesMatchFiles(_ media: ProcessedMedia) throws {
        for variant in media.variants {
            let image = try Fixtures.load(variant.bytes)
            #expect("\(image.width)x\(image.height)" == "\(variant.width)x\(variant.height)", "\(variant.variant)")
            #expect(MediaType.sniff(variant.bytes) == .jpeg, "\(variant.variant)")
            #expect(image.bands == 3, "\(variant.variant)")
        }
    }

    /// A camera JPEG: 1600 × 800 stored, EXIF orientation 6 (displayed rotated 90° clockwise), GPS in
    /// EXIF and XMP, a city in IPTC. Out: upright 800 × 1600 pixels, no metadata anywhere.
    @Test func jpegWithGPSAndRotation() throws {
        let (width, height) = (1600, 800)
        let pixels = Fixtures.halves(width: width, height: height, left: (230, 20, 20), right: (20, 20, 230))
        let upload = MediaFiles.withMetadata(try Fixtures.jpeg(pixels, width: width, height: height), orientation: 6)

        // The fixture really carries what we claim, as both libvips and exiftool read it.
        let source = try Fixtures.load(upload)
        #expect(source.fieldText("orientation") == "6")
        #expect(source.hasField("exif-ifd3-GPSLatitude"))
        #expect(source.hasField("xmp-data"))
        #expect(source.hasField("iptc-data"))
        let tags = try MediaFiles.exiftool(upload)
        #expect(tags["GPS:GPSLatitude"] != nil)
        #expect(tags["XMP-exif:GPSLatitude"] != nil)
        #expect(tags["IPTC:City"] as? String == "Paris")
        #expect(tags["IFD0:Orientation"] as? Int == 6)

        let media = try processor.process(upload, declaredContentType: "image/jpeg")
        #expect(media.kind == .photo && media.sourceType == .jpeg)
        #expect(media.id == MediaID(contentOf: upload))
        #expect(media.durationMs == nil)
        #expect("\(media.width)x\(media.height)" == "800x1600")
        #expect(media.variants.map(\.variant) == [.original, .long1080, .long640, .square320])
        #expect(
            sizes(media) == [.original: [800, 1600], .long1080: [540, 1080], .long640: [320, 640], .square320: [320, 320]])
        try expectSizesMatchFiles(media)

        // Orientation 6: the stored left edge is the displayed top. Red was on the left, so it is on top.
        let upright = try Fixtures.load(media.variant(.original)!.bytes)
        let top = Fixtures.pixel(upright, 400, 200)
        let bottom = Fixtures.pixel(upright, 400, 1400)
        #expect(top[0] > 180 && top[2] < 80, "top is \(top)")
        #expect(bottom[2] > 180 && bottom[0] < 80, "bottom is \(bottom)")

        for variant in media.variants {
            try MetadataCheck.expectClean(variant.bytes, "jpeg \(variant.variant.rawValue)")
        }
    }

    /// Every EXIF orientation (1–8) gives an upright picture of the same displayed size.
    @Test(arguments: 1...8)
    func everyOrientation(_ orientation: UInt16) throws {
        let pixels = Fixtures.halves(width: 64, height: 32, left: (230, 20, 20), right: (20, 20, 230))
        let upload = MediaFiles.withMetadata(try Fixtures.jpeg(pixels, width: 64, height: 32), orientation: orientation)
        let media = try processor.process(upload)
        let expected = orientation >= 5 ? [32, 64] : [64, 32]
        #expect([media.width, media.height] as [Int] == expected)
        try MetadataCheck.expectClean(media.variant(.original)!.bytes, "orientation \(orientation)")
    }

    /// A PNG with transparency: flattened onto white, 3200 × 1600 scaled to 1080 × 540 and 640 × 320.
    @Test func theWorkOfAPhotoIsItsHeadersPixels() throws {
        let pixels = Fixtures.busy(width: 640, height: 480)
        let jpeg = try Fixtures.jpeg(pixels, width: 640, height: 480)
        let png = try Fixtures.png(try Fixtures.image(pixels, width: 640, height: 480))
        #expect(MediaProcessor.workEstimate(jpeg) == 640 * 480)
        #expect(MediaProcessor.workEstimate(png) == 640 * 480)
        // Bytes that are no media count 1 (they are refused at once).
        #expect(MediaProcessor.workEstimate(Array("not media at all".utf8)) == 1)
    }

    @Test func pngWithAlpha() throws {
        let (width, height) = (3200, 1600)
        var rgba = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                rgba[i] = 20
                rgba[i + 1] = 200
                rgba[i + 2] = 20
                rgba[i + 3] = x < width / 2 ? 255 : 0  // the right half fully transparent
            }
        }
        let image = try rgba.withBytes { buffer throws(MediaError) in
            guard
                let p = vips_image_new_from_memory_copy(
                    buffer.baseAddress, buffer.count, Int32(width), Int32(height), 4, VIPS_FORMAT_UCHAR)
            else { throw .processingFailed(operation: "new", message: Vips.takeError()) }
            return VipsImageRef(taking: p)
        }
        let upload = try Fixtures.png(image)
        #expect(MediaType.sniff(upload) == .png)
        let media = try processor.process(upload, declaredContentType: "image/png")
        #expect(
            sizes(media) == [.original: [3200, 1600], .long1080: [1080, 540], .long640: [640, 320], .square320: [320, 320]])
        try expectSizesMatchFiles(media)
        let out = try Fixtures.load(media.variant(.long640)!.bytes)
        let opaque = Fixtures.pixel(out, 100, 160)
        let transparent = Fixtures.pixel(out, 600, 160)
        #expect(opaque[1] > 170 && opaque[0] < 60, "opaque side is \(opaque)")
        #expect(transparent.allSatisfy { $0 > 240 }, "transparent side is \(transparent), expected white")
        try MetadataCheck.expectClean(media.variant(.original)!.bytes, "png original")
    }

    /// Small pictures are never enlarged, except into the fixed-size grid thumbnail.
    @Test func neverUpscales() throws {
        let upload = try Fixtures.jpeg(Fixtures.busy(width: 300, height: 200), width: 300, height: 200)
        let media = try processor.process(upload)
        #expect(
            sizes(media) == [.original: [300, 200], .long1080: [300, 200], .long640: [300, 200], .square320: [320, 320]])
    }

    @Test func webp() throws {
        let upload = try Fixtures.webp(try Fixtures.image(Fixtures.busy(width: 1200, height: 900), width: 1200, height: 900))
        #expect(MediaType.sniff(upload) == .webp)
        let media = try processor.process(upload, declaredContentType: "image/webp")
        #expect(
            sizes(media) == [.original: [1200, 900], .long1080: [1080, 810], .long640: [640, 480], .square320: [320, 320]])
        try expectSizesMatchFiles(media)
    }

    /// A HEIC made here by libheif's x265 encoder, with an EXIF item carrying GPS and a camera make.
    @Test func heicWithEXIF() throws {
        let pixels = Fixtures.halves(width: 1280, height: 960, left: (230, 20, 20), right: (20, 20, 230))
        let upload = try Fixtures.heic(
            try Fixtures.image(pixels, width: 1280, height: 960), exif: MediaFiles.exif(orientation: 1))
        #expect(MediaType.sniff(upload) == .heic)
        let tags = try MediaFiles.exiftool(upload)
        #expect(tags["GPS:GPSLatitude"] != nil, "the HEIC fixture should carry GPS")

        let media = try processor.process(upload, declaredContentType: "image/heic")
        #expect(media.sourceType == .heic)
        #expect(
            sizes(media) == [.original: [1280, 960], .long1080: [1080, 810], .long640: [640, 480], .square320: [320, 320]])
        try expectSizesMatchFiles(media)
        let out = try Fixtures.load(media.variant(.original)!.bytes)
        #expect(Fixtures.pixel(out, 100, 480)[0] > 180)
        for variant in media.variants {
            try MetadataCheck.expectClean(variant.bytes, "heic \(variant.variant.rawValue)")
        }
    }

    /// A CMYK JPEG with an embedded ICC profile: converted to sRGB through the profile, profile dropped.
    @Test func cmykWithICCProfile() throws {
        let rgb = try Fixtures.image(
            Fixtures.halves(width: 400, height: 200, left: (220, 30, 30), right: (30, 30, 220)), width: 400, height: 200)
        let cmyk = try rgb.apply("icc_transform") { shim_vips_icc_transform($0, $1, "cmyk") }
        let upload = try cmyk.save("jpegsave") { shim_vips_jpegsave_buffer($0, $1, $2, 90, 0, 0, 0) }
        let source = try Fixtures.load(upload)
        #expect(source.bands == 4 && source.hasField("icc-profile-data"))

        let media = try processor.process(upload)
        let out = try Fixtures.load(media.variant(.original)!.bytes)
        #expect(out.bands == 3)
        let red = Fixtures.pixel(out, 50, 100)
        #expect(red[0] > 150 && red[1] < 100 && red[2] < 100, "left side is \(red)")
        try MetadataCheck.expectClean(media.variant(.original)!.bytes, "cmyk original")
    }

    /// An embedded ICC profile that does not parse falls back to libvips's own conversion; a greyscale
    /// 16-bit PNG comes out as 8-bit sRGB.
    @Test func unusualColourInputs() throws {
        let rgb = try Fixtures.image(Fixtures.busy(width: 64, height: 48), width: 64, height: 48)
        let jpeg = try rgb.jpeg(quality: 90)
        // An APP2 ICC_PROFILE segment (ICC.1:2010 Annex B.4), chunk 1 of 1, holding 200 bytes of nonsense.
        let app2 = MediaFiles.segment(0xE2, Array("ICC_PROFILE".utf8) + [0, 1, 1] + [UInt8](repeating: 0x5A, count: 200))
        let badProfile = [0xFF, 0xD8] + app2 + jpeg.dropFirst(2)
        #expect(try Fixtures.load(badProfile).hasField("icc-profile-data"))
        let media = try processor.process(badProfile)
        #expect(media.width == 64)
        try MetadataCheck.expectClean(media.variant(.original)!.bytes, "bad profile original")

        let grey16 = try rgb.apply("colourspace") { shim_vips_colourspace($0, $1, VIPS_INTERPRETATION_GREY16) }
        let png = try Fixtures.png(grey16)
        #expect(try Fixtures.load(png).bands == 1)
        let out = try Fixtures.load(try processor.process(png).variant(.original)!.bytes)
        #expect(out.bands == 3 && out.format == VIPS_FORMAT_UCHAR)
    }

    /// A JPEG cut off part-way through its image data: the header parses, the pixels do not.
    @Test func truncatedJPEGIsRefused() throws {
        let whole = try Fixtures.jpeg(Fixtures.busy(width: 800, height: 600), width: 800, height: 600)
        let truncated = Array(whole.prefix(whole.count * 6 / 10))
        #expect(MediaType.sniff(truncated) == .jpeg)
        #expect {
            _ = try processor.process(truncated, declaredContentType: "image/jpeg")
        } throws: { error in
            guard case .unsupportedMedia = error as? MediaError else { return false }
            return true
        }
        // Cut inside the header too.
        #expect(throws: MediaError.self) { _ = try processor.process(Array(whole.prefix(40))) }
    }

    /// A 60,000 × 60,000 PNG header (10.8 GB of RGB once decoded) in a few dozen bytes: refused from the
    /// header, with no noticeable memory allocated.
    @Test func pngHeaderBombIsRefused() throws {
        let bomb = MediaFiles.pngHeaderBomb(width: 60_000, height: 60_000)
        #expect(bomb.count < 100)
        #expect(MediaType.sniff(bomb) == .png)
        let before = Self.peakRSSBytes()
        let start = ContinuousClock.now
        #expect(throws: MediaError.imageTooLarge(width: 60_000, height: 60_000, limitPixels: 50_000_000)) {
            _ = try processor.process(bomb, declaredContentType: "image/png")
        }
        #expect(ContinuousClock.now - start < .seconds(1))
        let grown = Self.peakRSSBytes() - before
        #expect(grown < 64 << 20, "peak RSS grew by \(grown) bytes")
        #expect(MediaError.imageTooLarge(width: 1, height: 1, limitPixels: 0).httpStatus == 422)
        #expect(MediaError.imageTooLarge(width: 1, height: 1, limitPixels: 0).code == "image_too_large")
    }

    /// The limit is on the pixel count: 8,000 × 7,000 (56 MP) is refused from its header; with the limit
    /// lowered to 10,000 pixels (to stay fast), 100 × 100 passes and 101 × 100 is refused.
    @Test func pixelLimitFromHeader() throws {
        #expect(throws: MediaError.imageTooLarge(width: 8_000, height: 7_000, limitPixels: 50_000_000)) {
            _ = try processor.process(MediaFiles.pngHeaderBomb(width: 8_000, height: 7_000))
        }
        let small = try MediaProcessor(maxPixels: 10_000)
        let fits = try Fixtures.jpeg(Fixtures.busy(width: 100, height: 100), width: 100, height: 100)
        let over = try Fixtures.jpeg(Fixtures.busy(width: 101, height: 100), width: 101, height: 100)
        #expect(try small.process(fits).width == 100)
        #expect(throws: MediaError.imageTooLarge(width: 101, height: 100, limitPixels: 10_000)) { _ = try small.process(over) }
    }

    /// libvips is used from several threads at once (as ProfileService's workers will): each result is
    /// the one the same upload gives alone.
    @Test func concurrentProcessing() async throws {
        let uploads = try (0..<6).map { i in
            try Fixtures.jpeg(Fixtures.busy(width: 300 + 40 * i, height: 200, seed: UInt64(i)), width: 300 + 40 * i, height: 200)
        }
        let alone = try uploads.map { try processor.process($0).variants.map(\.bytes) }
        let shared = processor
        let together = try await withThrowingTaskGroup(of: (Int, [[UInt8]]).self) { group in
            for (i, upload) in uploads.enumerated() {
                group.addTask { (i, try shared.process(upload).variants.map(\.bytes)) }
            }
            var out = [[[UInt8]]](repeating: [], count: uploads.count)
            for try await (i, variants) in group { out[i] = variants }
            return out
        }
        #expect(together == alone)
    }

    /// Peak resident set size of this process so far (`getrusage`, Linux reports kilobytes).
    static func peakRSSBytes() -> Int {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss * 1024
    }
}
