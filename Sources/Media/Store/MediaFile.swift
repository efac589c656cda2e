#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One stored variant opened for reading: the only owner of its file descriptor, closed in `deinit`
/// unless handed over with ``takeFileDescriptor()``.
///
/// Because variants are written once and never replaced, the open file keeps exactly the bytes it had
/// when opened, even if the media is deleted meanwhile, so ``size`` stays right for `Content-Length` and
/// byte ranges (RFC 9110 §14), and ``etag`` names the content for good.
///
/// Not `Sendable`: one thread reads it.
public final class MediaFile {
    /// The media this variant belongs to.
    public let id: MediaID
    /// Which variant it is.
    public let variant: MediaVariant
    /// The type of the file's bytes (e.g. ``MediaType/jpeg``, ``MediaType/mp4``).
    public let type: MediaType
    /// Size in bytes.
    public let size: Int
    private var descriptor: Int32

    init(id: MediaID, variant: MediaVariant, type: MediaType, size: Int, descriptor: Int32) {
        self.id = id
        self.variant = variant
        self.type = type
        self.size = size
        self.descriptor = descriptor
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// The `Content-Type` to serve it with (API.md: `image/jpeg`, `video/mp4`, `video/quicktime`).
    public var contentType: String { type.mimeType }

    /// A strong entity tag (RFC 9110 §8.8.3), quotes included: `"<id>-<variant>"`. Stable because a stored
    /// variant is never rewritten.
    public var etag: String { "\"\(id.hex)-\(variant.rawValue)\"" }

    /// Reads `range` (byte offsets, clamped to the file) with `pread`, retrying on EINTR.
    /// - Throws: ``MediaError/storage(operation:path:errno:)``, or if the descriptor was handed over.
    public func read(_ range: Range<Int>) throws(MediaError) -> [UInt8] {
        guard descriptor >= 0 else { throw .storage(operation: "read", path: "\(id)/\(variant.rawValue)", errno: EBADF) }
        let lower = max(0, min(range.lowerBound, size))
        let upper = max(lower, min(range.upperBound, size))
        var out = [UInt8](repeating: 0, count: upper - lower)
        var done = 0
        let failure: Int32? = out.withUnsafeMutableBytes { buffer in
            while done < buffer.count {
                let n = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(lower + done))
                if n > 0 {
                    done += n
                } else if n == 0 {
                    return EIO  // the file is shorter than its size: cannot happen for a write-once file
                } else if errno != EINTR {
                    return errno
                }
            }
            return nil
        }
        if let failure { throw .storage(operation: "pread", path: "\(id)/\(variant.rawValue)", errno: failure) }
        return out
    }

    /// Reads the whole file.
    /// - Throws: as ``read(_:)``.
    public func readAll() throws(MediaError) -> [UInt8] {
        try read(0..<size)
    }

    /// Hands the open descriptor over to the caller, who must close it (e.g. libmicrohttpd's
    /// `MHD_create_response_from_fd_at_offset64`, which closes it with the response). Afterwards this
    /// object no longer reads or closes it. Returns -1 if it was already taken.
    public func takeFileDescriptor() -> Int32 {
        defer { descriptor = -1 }
        return descriptor
    }
}

@available(*, unavailable)
extension MediaFile: Sendable {}
