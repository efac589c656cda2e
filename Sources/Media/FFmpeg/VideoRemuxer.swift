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
/// The input is read as a ``MemoryContainer`` and the output written to memory: no file name or URL
/// is ever opened.
///
/// Not `Sendable`: one thread runs it.
final class VideoRemuxer {
    private let bytes: UnsafeRawBufferPointer
    private let output = MemoryOutput()
    /// Released after the packet and the output (stored properties go after `deinit`'s body).
    private var input: MemoryContainer?
    private var outputFormat: UnsafeMutablePointer<AVFormatContext>?
    private var outputIO: UnsafeMutablePointer<AVIOContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// After `remux`: the span of the copied packets, from the earliest start to the latest
    /// end (presentation time + duration), in milliseconds; nil when no packet had a time. What
    /// was stored, whatever the container's header (`mvhd`/`mdhd`) claims.
    private(set) var copiedDurationMs: Int?

    /// Starts reading `bytes`, which must stay valid until the remuxer is released.
    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    deinit {
        av_packet_free(&packet)
        avformat_free_context(outputFormat)
        FFmpegIO.free(&outputIO)
    }

    /// The video in a new `muxer` container (`"mp4"` or `"mov"`) without metadata.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)`` when the container does not open or its
    ///   packets cannot be copied, ``MediaError/processingFailed(operation:message:)`` for allocation
    ///   failures.
    func remux(muxer: String) throws(MediaError) -> [UInt8] {
        let input = try MemoryContainer(bytes: bytes)
        self.input = input
        let source = input.format
        guard avformat_alloc_output_context2(&outputFormat, nil, muxer, nil) >= 0, let target = outputFormat else {
            throw .processingFailed(operation: "avformat_alloc_output_context2", message: muxer)
        }
        var map = [Int32](repeating: -1, count: Int(source.pointee.nb_streams))
        for i in 0..<Int(source.pointee.nb_streams) {
            guard let stream = source.pointee.streams[i], let parameters = stream.pointee.codecpar else { continue }
            let type = parameters.pointee.codec_type
            guard type == AVMEDIA_TYPE_VIDEO || type == AVMEDIA_TYPE_AUDIO else { continue }
            guard let copy = avformat_new_stream(target, nil) else {
                throw FFmpegIO.failure("avformat_new_stream", shim_averror(ENOMEM))
            }
            let copied = avcodec_parameters_copy(copy.pointee.codecpar, parameters)
            guard copied >= 0 else { throw FFmpegIO.failure("avcodec_parameters_copy", copied) }
            copy.pointee.time_base = stream.pointee.time_base
            copy.pointee.disposition = stream.pointee.disposition
            copy.pointee.sample_aspect_ratio = stream.pointee.sample_aspect_ratio
            for k in 0..<Int(stream.pointee.nb_side_data) {
                let data = stream.pointee.side_data[k]
                guard data.type == AV_PKT_DATA_DISPLAYMATRIX, let bytes = data.data else { continue }
                guard let destination = av_stream_new_side_data(copy, data.type, data.size) else {
                    throw FFmpegIO.failure("av_stream_new_side_data", shim_averror(ENOMEM))
                }
                destination.update(from: bytes, count: data.size)
            }
            map[i] = copy.pointee.index
        }
        guard map.contains(where: { $0 >= 0 }) else { throw .unsupportedMedia(reason: "the container has no video stream") }

        outputIO = try FFmpegIO.context(
            for: output, writable: true, read: nil,
            write: { opaque, buffer, size in
                Unmanaged<MemoryOutput>.fromOpaque(opaque!).takeUnretainedValue().write(buffer, count: Int(size))
            },
            seek: { opaque, offset, whence in
                Unmanaged<MemoryOutput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence: whence)
            })
        target.pointee.pb = outputIO
        target.pointee.flags |= AVFMT_FLAG_CUSTOM_IO | AVFMT_FLAG_BITEXACT
        let header = avformat_write_header(target, nil)
        guard header >= 0 else { throw .unsupportedMedia(reason: "the streams cannot be copied (\(FFmpegIO.message(header)))") }

        guard let packet = av_packet_alloc() else { throw FFmpegIO.failure("av_packet_alloc", shim_averror(ENOMEM)) }
        self.packet = packet
        var span = PacketSpan()
        while true {
            let read = av_read_frame(source, packet)
            if read == shim_averror_eof() { break }
            guard read >= 0 else { throw .unsupportedMedia(reason: "a packet does not read (\(FFmpegIO.message(read)))") }
            let index = Int(packet.pointee.stream_index)
            guard index < map.count, map[index] >= 0 else {
                av_packet_unref(packet)
                continue
            }
            let from = source.pointee.streams[index]!.pointee.time_base
            let to = target.pointee.streams[Int(map[index])]!.pointee.time_base
            span.add(packet.pointee, timeBase: from)
            packet.pointee.stream_index = map[index]
            av_packet_rescale_ts(packet, from, to)
            packet.pointee.pos = -1
            let written = av_interleaved_write_frame(target, packet)  // takes the packet's reference
            guard written >= 0 else {
                throw .unsupportedMedia(reason: "a packet cannot be copied (\(FFmpegIO.message(written)))")
            }
        }
        let trailer = av_write_trailer(target)
        guard trailer >= 0 else { throw .unsupportedMedia(reason: "the copy does not finish (\(FFmpegIO.message(trailer)))") }
        avio_flush(outputIO)
        copiedDurationMs = span.durationMs
        return output.bytes
    }
}

/// The earliest start and latest end of a set of packets, in milliseconds.
private struct PacketSpan {
    private var start: Double?
    private var end: Double?

    mutating func add(_ packet: AVPacket, timeBase: AVRational) {
        let unknown = shim_av_nopts_value()
        let time = packet.pts != unknown ? packet.pts : packet.dts
        guard time != unknown, timeBase.den > 0 else { return }
        let ms = Double(timeBase.num) * 1000 / Double(timeBase.den)
        let from = Double(time) * ms
        let to = Double(time + max(0, packet.duration)) * ms
        start = min(start ?? from, from)
        end = max(end ?? to, to)
    }

    var durationMs: Int? {
        guard let start, let end, end > start else { return nil }
        return Int((end - start).rounded())
    }
}

@available(*, unavailable)
extension VideoRemuxer: Sendable {}

/// A growing byte buffer with a position, for libavformat's write and seek callbacks (the MP4 muxer
/// seeks back to patch box sizes).
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

    /// `seek` (``FFmpegIO/seek(_:whence:position:size:pastEnd:)``; past the end is allowed).
    func seek(_ offset: Int64, whence: Int32) -> Int64 {
        let target = FFmpegIO.seek(offset, whence: whence, position: position, size: bytes.count, pastEnd: true)
        if target >= 0 && whence & AVSEEK_SIZE == 0 { position = Int(target) }
        return target
    }
}
