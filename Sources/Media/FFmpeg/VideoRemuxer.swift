import CFFmpeg

/// Copies a video's audio and video streams into a new container of the same kind without any of the
/// upload's metadata: no global tags (an iPhone `.mov` records where it was filmed in
/// `com.apple.quicktime.location.ISO6709` / `©xyz`, and the capture time, device make and model, and
/// software), no stream tags, no timecode or metadata tracks; the packets themselves are copied, never
/// re-encoded. What playback needs is kept: codec parameters and tags (`hvc1` stays `hvc1`), time
/// bases, dispositions and the display matrix (the rotation a phone records). Written `bitexact` (no
/// muxer version string; the same upload gives the same bytes), with the index (`moov`) last as the
/// muxer writes it: `+faststart` would move it first, but libavformat 5.1 does that by opening the
/// output again by file name, which an in-memory output has not (players fetch the index with a
/// range request, which `GET /media` answers).
///
/// The input is read from memory through a custom I/O context with the demuxer fixed to `mov`, and
/// the output written to memory, as in ``VideoDecoder``: no file name or URL is ever opened.
///
/// Not `Sendable`: one thread runs it.
final class VideoRemuxer {
    private let input: MemoryInput
    private let output = MemoryOutput()
    private var inputFormat: UnsafeMutablePointer<AVFormatContext>?
    private var inputIO: UnsafeMutablePointer<AVIOContext>?
    private var outputFormat: UnsafeMutablePointer<AVFormatContext>?
    private var outputIO: UnsafeMutablePointer<AVIOContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?

    private static let ioBufferBytes = 64 * 1024

    /// Starts reading `bytes`, which must stay valid until the remuxer is released.
    init(bytes: UnsafeRawBufferPointer) {
        input = MemoryInput(bytes)
        av_log_set_level(AV_LOG_QUIET)
    }

    deinit {
        av_packet_free(&packet)
        avformat_close_input(&inputFormat)
        Self.freeIO(&inputIO)
        avformat_free_context(outputFormat)
        Self.freeIO(&outputIO)
    }

    /// The video in a new `muxer` container (`"mp4"` or `"mov"`) without metadata.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)`` when the container does not open or its
    ///   packets cannot be copied, ``MediaError/processingFailed(operation:message:)`` for allocation
    ///   failures.
    func remux(muxer: String) throws(MediaError) -> [UInt8] {
        let source = try openInput()
        guard avformat_alloc_output_context2(&outputFormat, nil, muxer, nil) >= 0, let target = outputFormat else {
            throw .processingFailed(operation: "avformat_alloc_output_context2", message: muxer)
        }
        var map = [Int32](repeating: -1, count: Int(source.pointee.nb_streams))
        for i in 0..<Int(source.pointee.nb_streams) {
            guard let stream = source.pointee.streams[i], let parameters = stream.pointee.codecpar else { continue }
            let type = parameters.pointee.codec_type
            guard type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO else { continue }
            guard let copy = avformat_new_stream(target, nil) else { throw Self.failure("avformat_new_stream", ENOMEM) }
            let copied = avcodec_parameters_copy(copy.pointee.codecpar, parameters)
            guard copied >= 0 else { throw Self.failure("avcodec_parameters_copy", copied) }
            copy.pointee.time_base = stream.pointee.time_base
            copy.pointee.disposition = stream.pointee.disposition
            copy.pointee.sample_aspect_ratio = stream.pointee.sample_aspect_ratio
            for k in 0..<Int(stream.pointee.nb_side_data) {
                let data = stream.pointee.side_data[k]
                guard data.type == AV_PKT_DATA_DISPLAYMATRIX, let bytes = data.data else { continue }
                guard let destination = av_stream_new_side_data(copy, data.type, data.size) else {
                    throw Self.failure("av_stream_new_side_data", ENOMEM)
                }
                destination.update(from: bytes, count: data.size)
            }
            map[i] = copy.pointee.index
        }
        guard map.contains(where: { $0 >= 0 }) else { throw .unsupportedMedia(reason: "the container has no video stream") }

        guard let buffer = av_malloc(Self.ioBufferBytes) else { throw Self.failure("av_malloc", ENOMEM) }
        let opaque = Unmanaged.passUnretained(output).toOpaque()
        outputIO = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.ioBufferBytes), 1, opaque,
            { opaque, buffer, size in
                Unmanaged<MemoryOutput>.fromOpaque(opaque!).takeUnretainedValue().read(into: buffer, count: Int(size))
            },
            { opaque, buffer, size in
                Unmanaged<MemoryOutput>.fromOpaque(opaque!).takeUnretainedValue().write(buffer, count: Int(size))
            },
            { opaque, offset, whence in
                Unmanaged<MemoryOutput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence: whence)
            })
        guard outputIO != nil else {
            av_free(buffer)
            throw Self.failure("avio_alloc_context", ENOMEM)
        }
        target.pointee.pb = outputIO
        target.pointee.flags |= AVFMT_FLAG_CUSTOM_IO | AVFMT_FLAG_BITEXACT
        let header = avformat_write_header(target, nil)
        guard header >= 0 else { throw .unsupportedMedia(reason: "the streams cannot be copied (\(Self.message(header)))") }

        guard let packet = av_packet_alloc() else { throw Self.failure("av_packet_alloc", ENOMEM) }
        self.packet = packet
        while true {
            let read = av_read_frame(source, packet)
            if read == shim_averror_eof() { break }
            guard read >= 0 else { throw .unsupportedMedia(reason: "a packet does not read (\(Self.message(read)))") }
            let index = Int(packet.pointee.stream_index)
            guard index < map.count, map[index] >= 0 else {
                av_packet_unref(packet)
                continue
            }
            let from = source.pointee.streams[index]!.pointee.time_base
            let to = target.pointee.streams[Int(map[index])]!.pointee.time_base
            packet.pointee.stream_index = map[index]
            av_packet_rescale_ts(packet, from, to)
            packet.pointee.pos = -1
            let written = av_interleaved_write_frame(target, packet)  // takes the packet's reference
            guard written >= 0 else {
                throw .unsupportedMedia(reason: "a packet cannot be copied (\(Self.message(written)))")
            }
        }
        let trailer = av_write_trailer(target)
        guard trailer >= 0 else { throw .unsupportedMedia(reason: "the copy does not finish (\(Self.message(trailer)))") }
        avio_flush(outputIO)
        return output.bytes
    }

    private func openInput() throws(MediaError) -> UnsafeMutablePointer<AVFormatContext> {
        guard let buffer = av_malloc(Self.ioBufferBytes) else { throw Self.failure("av_malloc", ENOMEM) }
        let opaque = Unmanaged.passUnretained(input).toOpaque()
        inputIO = avio_alloc_context(
            buffer.assumingMemoryBound(to: UInt8.self), Int32(Self.ioBufferBytes), 0, opaque,
            { opaque, buffer, size in
                Unmanaged<MemoryInput>.fromOpaque(opaque!).takeUnretainedValue().read(into: buffer, count: Int(size))
            }, nil,
            { opaque, offset, whence in
                Unmanaged<MemoryInput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence: whence)
            })
        guard let inputIO else {
            av_free(buffer)
            throw Self.failure("avio_alloc_context", ENOMEM)
        }
        guard let context = avformat_alloc_context() else { throw Self.failure("avformat_alloc_context", ENOMEM) }
        context.pointee.pb = inputIO
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        inputFormat = context
        let opened = avformat_open_input(&inputFormat, nil, av_find_input_format("mov"), nil)
        guard opened >= 0, let format = inputFormat else {
            throw .unsupportedMedia(reason: "not a readable MP4/QuickTime container (\(Self.message(opened)))")
        }
        let found = avformat_find_stream_info(format, nil)
        guard found >= 0 else { throw .unsupportedMedia(reason: "the container's streams do not parse (\(Self.message(found)))") }
        return format
    }

    private static func freeIO(_ io: inout UnsafeMutablePointer<AVIOContext>?) {
        guard io != nil else { return }
        // libavformat may have replaced the buffer it was given; free the one it holds now.
        av_freep(&io!.pointee.buffer)
        avio_context_free(&io)
    }

    private static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard av_strerror(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func failure(_ operation: String, _ code: Int32) -> MediaError {
        .processingFailed(operation: operation, message: message(code < 0 ? code : shim_averror(code)))
    }
}

@available(*, unavailable)
extension VideoRemuxer: Sendable {}

/// A growing byte buffer with a position, for libavformat's write, read and seek callbacks (the MP4
/// muxer seeks back to patch box sizes).
private final class MemoryOutput {
    private(set) var bytes: [UInt8] = []
    private var position = 0

    /// `write_packet`: writes `count` bytes at the position, growing the buffer as needed.
    func write(_ buffer: UnsafePointer<UInt8>?, count: Int) -> Int32 {
        guard count > 0, let buffer else { return 0 }
        let end = position + count
        if end > bytes.count { bytes.append(contentsOf: repeatElement(0, count: end - bytes.count)) }
        bytes.withUnsafeMutableBufferPointer { out in
            (out.baseAddress! + position).update(from: buffer, count: count)
        }
        position = end
        return Int32(count)
    }

    /// `read_packet`: copies up to `count` bytes from the position; AVERROR_EOF at the end.
    func read(into buffer: UnsafeMutablePointer<UInt8>?, count: Int) -> Int32 {
        let available = bytes.count - position
        guard available > 0, count > 0, let buffer else { return shim_averror_eof() }
        let n = min(available, count)
        bytes.withUnsafeBufferPointer { source in buffer.update(from: source.baseAddress! + position, count: n) }
        position += n
        return Int32(n)
    }

    /// `seek`: SEEK_SET / SEEK_CUR / SEEK_END, or AVSEEK_SIZE to report the size.
    func seek(_ offset: Int64, whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return Int64(bytes.count) }
        let base: Int
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = position
        case SEEK_END: base = bytes.count
        default: return Int64(shim_averror(EINVAL))
        }
        let target = Int64(base) + offset
        guard target >= 0 else { return Int64(shim_averror(EINVAL)) }
        position = Int(target)
        return target
    }
}
