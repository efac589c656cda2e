import CVips
import Foundation
import Testing

@testable import Media

/// Test files made at test time: pictures drawn in memory and encoded by libvips, metadata blocks
/// (EXIF with GPS and orientation, XMP, IPTC) written byte by byte from their specifications, crafted
/// PNG headers, and videos made by the `ffmpeg` command-line tool.
enum Fixtures {
    /// Packed RGB pixels: the left half `left`, the right half `right`, with a faint diagonal texture so
    /// that encoders see something like a photo rather than flat colour.
    static func halves(width: Int, height: Int, left: (UInt8, UInt8, UInt8), right: (UInt8, UInt8, UInt8)) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        pixels.withUnsafeMutableBufferPointer { p in
            for y in 0..<height {
                for x in 0..<width {
                    let c = x < width / 2 ? left : right
                    let t = UInt8((x + y) % 8)
                    let i = (y * width + x) * 3
                    p[i] = c.0 &- t
                    p[i + 1] = c.1 &+ t
                    p[i + 2] = c.2 &+ t
                }
            }
        }
        return pixels
    }

    /// Busy pixels (coarse noise over gradients): compresses like a detailed photo, so truncating the
    /// file cuts into real image data.
    static func busy(width: Int, height: Int, seed: UInt64 = 1) -> [UInt8] {
        var state = seed | 1
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        pixels.withUnsafeMutableBufferPointer { p in
            for y in 0..<height {
                for x in 0..<width {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    let noise = UInt8(truncatingIfNeeded: state >> 59)
                    let i = (y * width + x) * 3
                    p[i] = UInt8(truncatingIfNeeded: x * 255 / max(width, 1)) &+ noise
                    p[i + 1] = UInt8(truncatingIfNeeded: y * 255 / max(height, 1)) &+ noise
                    p[i + 2] = UInt8(truncatingIfNeeded: (x + y) / 4) &+ noise
                }
            }
        }
        return pixels
    }

    static func image(_ pixels: [UInt8], width: Int, height: Int) throws -> VipsImageRef {
        try Vips.start()
        return try pixels.withBytes { buffer throws(MediaError) in try VipsImageRef.fromRGB(buffer, width: width, height: height)
        }
    }

    static func jpeg(_ pixels: [UInt8], width: Int, height: Int, quality: Int = 90) throws -> [UInt8] {
        try image(pixels, width: width, height: height).jpeg(quality: quality)
    }

    static func png(_ image: VipsImageRef) throws -> [UInt8] {
        try image.save("pngsave") { shim_vips_pngsave_buffer($0, $1, $2) }
    }

    static func webp(_ image: VipsImageRef) throws -> [UInt8] {
        try image.save("webpsave") { shim_vips_webpsave_buffer($0, $1, $2, 80) }
    }

    /// HEIC through libvips's heifsave (libheif with the x265 encoder); `exif` is embedded as the file's
    /// Exif item when given.
    static func heic(_ image: VipsImageRef, exif: [UInt8]? = nil, quality: Int = 50) throws -> [UInt8] {
        // A fresh copy, so metadata is set on an image nothing else uses yet.
        let target = try image.copyToMemory()
        if let exif {
            exif.withUnsafeBytes { vips_image_set_blob_copy(target.pointer, "exif-data", $0.baseAddress, $0.count) }
        }
        return try target.save("heifsave") { shim_vips_heifsave_buffer($0, $1, $2, Int32(quality), 0) }
    }

    /// Opens encoded bytes with libvips's generic loader, for checking outputs.
    static func load(_ bytes: [UInt8]) throws -> VipsImageRef {
        try Vips.start()
        let copy = bytes
        return try copy.withBytes { buffer throws(MediaError) in
            guard let image = shim_vips_image_new_from_buffer(UnsafeMutableRawPointer(mutating: buffer.baseAddress), buffer.count)
            else {
                throw .processingFailed(operation: "load", message: Vips.takeError())
            }
            // Decode now, so the image no longer refers to `copy`'s buffer.
            return try VipsImageRef(taking: image).copyToMemory()
        }
    }

    /// The RGB pixel at (x, y).
    static func pixel(_ image: VipsImageRef, _ x: Int, _ y: Int) -> [Double] {
        var vector: UnsafeMutablePointer<Double>?
        var count: Int32 = 0
        guard shim_vips_getpoint(image.pointer, &vector, &count, Int32(x), Int32(y)) == 0, let vector else { return [] }
        defer { g_free(vector) }
        return Array(UnsafeBufferPointer(start: vector, count: Int(count)))
    }
}
