import CVips

/// The only owner of one `VipsImage *` reference: released (`g_object_unref`) in `deinit`, whatever path
/// the code took. libvips images are immutable once built and reference-counted, so an operation's output
/// keeps its inputs alive on its own; this type only balances the reference it was handed.
///
/// Not `Sendable`: an image is used by the thread that made it (libvips's own worker threads aside).
final class VipsImageRef {
    let pointer: UnsafeMutablePointer<VipsImage>

    /// Takes over a reference returned by a libvips call.
    init(taking pointer: UnsafeMutablePointer<VipsImage>) {
        self.pointer = pointer
    }

    deinit {
        g_object_unref(UnsafeMutableRawPointer(pointer))
    }

    /// Width in pixels.
    var width: Int { Int(vips_image_get_width(pointer)) }
    /// Height in pixels.
    var height: Int { Int(vips_image_get_height(pointer)) }
    /// Number of bands (channels), alpha included.
    var bands: Int { Int(vips_image_get_bands(pointer)) }
    /// Whether the last band is alpha.
    var hasAlpha: Bool { vips_image_hasalpha(pointer) != 0 }
    var interpretation: VipsInterpretation { vips_image_get_interpretation(pointer) }
    var format: VipsBandFormat { vips_image_get_format(pointer) }

    /// Whether the image carries the metadata field `name` (e.g. `icc-profile-data`, `exif-data`).
    func hasField(_ name: String) -> Bool {
        vips_image_get_typeof(pointer, name) != 0
    }

    /// Every metadata field name libvips holds for the image (header fields included).
    func fieldNames() -> [String] {
        guard let list = vips_image_get_fields(pointer) else { return [] }
        defer { g_strfreev(list) }
        var names: [String] = []
        var index = 0
        while let name = list[index] {
            names.append(String(cString: name))
            index += 1
        }
        return names
    }

    /// The metadata field `name` as text (libvips's rendering of any type), or nil if absent.
    func fieldText(_ name: String) -> String? {
        guard hasField(name) else { return nil }
        var text: UnsafeMutablePointer<CChar>?
        guard vips_image_get_as_string(pointer, name, &text) == 0, let text else { return nil }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// Runs one libvips operation that makes a new image from this one.
    /// - Throws: ``MediaError/processingFailed(operation:message:)`` with libvips's message.
    func apply(
        _ operation: String,
        _ body: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutablePointer<VipsImage>?>) -> Int32
    ) throws(MediaError) -> VipsImageRef {
        var out: UnsafeMutablePointer<VipsImage>?
        guard body(pointer, &out) == 0, let out else {
            throw .processingFailed(operation: operation, message: Vips.takeError())
        }
        return VipsImageRef(taking: out)
    }

    /// Computes every pixel into memory (decoding happens here for a freshly loaded image).
    /// - Throws: ``MediaError/processingFailed(operation:message:)``; callers decide what a failure means.
    func copyToMemory() throws(MediaError) -> VipsImageRef {
        guard let out = vips_image_copy_memory(pointer) else {
            throw .processingFailed(operation: "vips_image_copy_memory", message: Vips.takeError())
        }
        return VipsImageRef(taking: out)
    }

    /// Encodes as baseline JPEG with every metadata block left out (`strip`: EXIF, XMP, IPTC, ICC).
    /// - Parameter quality: libjpeg quality, 1...100.
    func jpeg(quality: Int) throws(MediaError) -> [UInt8] {
        try save("vips_jpegsave_buffer") { image, buffer, length in
            shim_vips_jpegsave_buffer(image, buffer, length, Int32(quality), 1, 1, 0)
        }
    }

    /// Runs a `*save_buffer` operation and copies its output out of libvips's `g_malloc`ed buffer.
    func save(
        _ operation: String,
        _ body: (UnsafeMutablePointer<VipsImage>, UnsafeMutablePointer<UnsafeMutableRawPointer?>, UnsafeMutablePointer<Int>) ->
            Int32
    ) throws(MediaError) -> [UInt8] {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        guard body(pointer, &buffer, &length) == 0, let buffer else {
            throw .processingFailed(operation: operation, message: Vips.takeError())
        }
        defer { g_free(buffer) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: length))
    }

    /// An image of `width` × `height` pixels from packed 8-bit RGB rows (`width * 3` bytes each), copied.
    static func fromRGB(_ pixels: UnsafeRawBufferPointer, width: Int, height: Int) throws(MediaError) -> VipsImageRef {
        guard
            let image = vips_image_new_from_memory_copy(
                pixels.baseAddress, pixels.count, Int32(width), Int32(height), 3, VIPS_FORMAT_UCHAR)
        else {
            throw .processingFailed(operation: "vips_image_new_from_memory_copy", message: Vips.takeError())
        }
        return VipsImageRef(taking: image)
    }
}

@available(*, unavailable)
extension VipsImageRef: Sendable {}
