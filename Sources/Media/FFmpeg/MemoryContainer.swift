import CFFmpeg

/// An upload held in memory, opened with libavformat's `mov` demuxer (MP4 and QuickTime) through
/// a custom I/O context: no file name or URL is ever given, so no other demuxer (HLS, concat, …)
/// nor protocol can be reached from an upload, and external data references (`dref`) stay off,
/// libavformat's default. Owns the demuxer and its I/O context and frees both on release.
/// Used by ``VideoDecoder`` and ``VideoRemuxer``.
///
/// Not `Sendable`: one thread opens, reads and releases it.
final class MemoryContainer {
    /// The opened demuxer, its streams found (`avformat_find_stream_info`).
    let format: UnsafeMutablePointer<AVFormatContext>
    private let input: MemoryInput
    private var io: UnsafeMutablePointer<AVIOContext>?

    /// Size of the buffer libavformat reads and writes through, in bytes.
    static let ioBufferBytes = 64 * 1024

    /// Opens `bytes`, which must stay valid until the container is released.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)`` when it is not a readable MP4/QuickTime
    ///   container or its streams do not parse, ``MediaError/processingFailed(operation:message:)``
    ///   for allocation failures.
    init(bytes: UnsafeRawBufferPointer) throws(MediaError) {
        av_log_set_level(AV_LOG_QUIET)
        let input = MemoryInput(bytes)
        var io = try FFmpegIO.context(
            for: input, writable: false,
            read: { opaque, buffer, size in
                Unmanaged<MemoryInput>.fromOpaque(opaque!).takeUnretainedValue().read(into: buffer, count: Int(size))
            }, write: nil,
            seek: { opaque, offset, whence in
                Unmanaged<MemoryInput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence: whence)
            })
        guard let context = avformat_alloc_context() else {
            FFmpegIO.free(&io)
            throw FFmpegIO.failure("avformat_alloc_context", shim_averror(ENOMEM))
        }
        context.pointee.pb = io
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        // On failure avformat_open_input frees the context and sets it to nil; `io` stays ours.
        var opened: UnsafeMutablePointer<AVFormatContext>? = context
        let status = avformat_open_input(&opened, nil, av_find_input_format("mov"), nil)
        guard status >= 0, let format = opened else {
            FFmpegIO.free(&io)
            throw .unsupportedMedia(reason: "not a readable MP4/QuickTime container (\(FFmpegIO.message(status)))")
        }
        let found = avformat_find_stream_info(format, nil)
        guard found >= 0 else {
            avformat_close_input(&opened)
            FFmpegIO.free(&io)
            throw .unsupportedMedia(reason: "the container's streams do not parse (\(FFmpegIO.message(found)))")
        }
        self.input = input
        self.io = io
        self.format = format
    }

    deinit {
        var format: UnsafeMutablePointer<AVFormatContext>? = self.format
        avformat_close_input(&format)
        FFmpegIO.free(&io)
    }
}

@available(*, unavailable)
extension MemoryContainer: Sendable {}

/// Custom I/O contexts over memory, and libavutil's errors as ``MediaError``.
enum FFmpegIO {
    /// An I/O context over `owner` (passed to the callbacks as their opaque pointer, unretained:
    /// the caller keeps it alive) with a buffer of ``MemoryContainer/ioBufferBytes``.
    /// - Throws: ``MediaError/processingFailed(operation:message:)`` when allocation fails.
    static func context(
        for owner: AnyObject, writable: Bool,
        read: (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32)?,
        write: (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32)?,
        seek: (@convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64)?
    ) throws(MediaError) -> UnsafeMutablePointer<AVIOContext>? {
        let size = MemoryContainer.ioBufferBytes
        guard let buffer = av_malloc(size) else { throw failure("av_malloc", shim_averror(ENOMEM)) }
        let opaque = Unmanaged.passUnretained(owner).toOpaque()
        guard
            let io = avio_alloc_context(
                buffer.assumingMemoryBound(to: UInt8.self), Int32(size), writable ? 1 : 0, opaque, read, write, seek)
        else {
            av_free(buffer)
            throw failure("avio_alloc_context", shim_averror(ENOMEM))
        }
        return io
    }

    /// Frees an I/O context and the buffer it holds now (libavformat may have replaced the one it
    /// was given).
    static func free(_ io: inout UnsafeMutablePointer<AVIOContext>?) {
        guard io != nil else { return }
        av_freep(&io!.pointee.buffer)
        avio_context_free(&io)
    }

    /// The new position for a `seek` callback over `size` bytes (SEEK_SET / SEEK_CUR / SEEK_END;
    /// AVSEEK_SIZE reports the size), or an AVERROR: before the start, or past the end unless
    /// `pastEnd` (an output may seek past what it wrote).
    static func seek(_ offset: Int64, whence: Int32, position: Int, size: Int, pastEnd: Bool) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return Int64(size) }
        let base: Int
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = position
        case SEEK_END: base = size
        default: return Int64(shim_averror(EINVAL))
        }
        let target = Int64(base) + offset
        guard target >= 0, pastEnd || target <= Int64(size) else { return Int64(shim_averror(EINVAL)) }
        return target
    }

    /// libavutil's text for an error code.
    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard av_strerror(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A failed call as ``MediaError/processingFailed(operation:message:)``; `code` is an AVERROR.
    static func failure(_ operation: String, _ code: Int32) -> MediaError {
        .processingFailed(operation: operation, message: message(code))
    }
}

/// The read position over an upload held in memory, for libavformat's read and seek callbacks.
final class MemoryInput {
    let bytes: UnsafeRawBufferPointer
    private var position = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// `read_packet`: copies up to `count` bytes; AVERROR_EOF at the end.
    func read(into buffer: UnsafeMutablePointer<UInt8>?, count: Int) -> Int32 {
        let available = bytes.count - position
        guard available > 0, count > 0, let buffer else { return shim_averror_eof() }
        let n = min(available, count)
        UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + position, byteCount: n)
        position += n
        return Int32(n)
    }

    /// `seek` (``FFmpegIO/seek(_:whence:position:size:pastEnd:)``, not past the end).
    func seek(_ offset: Int64, whence: Int32) -> Int64 {
        let target = FFmpegIO.seek(offset, whence: whence, position: position, size: bytes.count, pastEnd: false)
        if target >= 0 && whence & AVSEEK_SIZE == 0 { position = Int(target) }
        return target
    }
}
