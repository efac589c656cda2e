import CFFmpeg

/// What the container says about a video, and its first frame.
struct VideoProbe {
    /// Coded frame width and height in pixels (before rotation and pixel aspect are applied).
    let codedWidth: Int
    let codedHeight: Int
    /// Clockwise rotation for display, in degrees: 0, 90, 180 or 270 (from the track's display matrix).
    let rotation: Int
    /// Pixel (sample) aspect ratio, width over height of one pixel; 1 for square pixels.
    let pixelAspect: Double
    /// Duration in milliseconds, if the container states one.
    let durationMs: Int?
    /// The first decoded frame as packed 8-bit RGB, `codedWidth * 3` bytes a row, top row first.
    let frameRGB: [UInt8]
}

/// Reads a video held in memory with FFmpeg's libraries (libavformat's MOV/MP4 demuxer only, then the
/// stream's decoder and libswscale), owning every FFmpeg handle it makes and freeing each on every path.
///
/// The bytes are read as a ``MemoryContainer``: through a custom I/O context, never a file name or URL,
/// with the demuxer fixed to `mov`.
///
/// Not `Sendable`: one thread opens, decodes and releases it.
final class VideoDecoder {
    /// Packets read while looking for the first frame before giving up (a stream that never yields a
    /// picture is refused rather than read to its end).
    static let maxPacketsForFirstFrame = 2_000

    private let bytes: UnsafeRawBufferPointer
    /// Released after the codec and frames (stored properties go after `deinit`'s body).
    private var container: MemoryContainer?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var rgbFrame: UnsafeMutablePointer<AVFrame>?
    private var scaler: OpaquePointer?

    /// Starts reading `bytes`, which must stay valid until the decoder is released.
    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    deinit {
        sws_freeContext(scaler)
        av_frame_free(&rgbFrame)
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
    }

    /// Opens the container, finds the video stream, checks its frame size against `maxPixels`, and
    /// decodes the first frame.
    /// - Throws: ``MediaError/unsupportedMedia(reason:)`` (not a readable MP4/QuickTime container, no video
    ///   stream, no decoder, no frame), ``MediaError/imageTooLarge(width:height:limitPixels:)``,
    ///   ``MediaError/processingFailed(operation:message:)`` (allocation or conversion failures).
    func probe(maxPixels: Int) throws(MediaError) -> VideoProbe {
        let container = try MemoryContainer(bytes: bytes)
        self.container = container
        let format = container.format
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0)
        guard index >= 0, let stream = format.pointee.streams[Int(index)] else {
            throw .unsupportedMedia(reason: "the container has no video stream")
        }
        guard let decoder else { throw .unsupportedMedia(reason: "no decoder for the video stream") }
        let parameters = stream.pointee.codecpar!
        let (width, height) = (Int(parameters.pointee.width), Int(parameters.pointee.height))
        guard width > 0, height > 0 else { throw .unsupportedMedia(reason: "the video stream has no frame size") }
        if width * height > maxPixels {
            throw .imageTooLarge(width: width, height: height, limitPixels: maxPixels)
        }
        try openDecoder(decoder, parameters: parameters)
        let pixels = try firstFrameRGB(streamIndex: index, width: width, height: height)
        return VideoProbe(
            codedWidth: width, codedHeight: height, rotation: Self.rotation(of: stream),
            pixelAspect: Self.pixelAspect(stream: stream, parameters: parameters),
            durationMs: Self.durationMs(format: format, stream: stream), frameRGB: pixels)
    }

    // MARK: Steps

    private func openDecoder(_ decoder: UnsafePointer<AVCodec>, parameters: UnsafeMutablePointer<AVCodecParameters>)
        throws(MediaError)
    {
        guard let codec = avcodec_alloc_context3(decoder) else {
            throw FFmpegIO.failure("avcodec_alloc_context3", shim_averror(ENOMEM))
        }
        self.codec = codec
        let copied = avcodec_parameters_to_context(codec, parameters)
        guard copied >= 0 else { throw FFmpegIO.failure("avcodec_parameters_to_context", copied) }
        codec.pointee.thread_count = 1
        let opened = avcodec_open2(codec, decoder, nil)
        guard opened >= 0 else { throw .unsupportedMedia(reason: "the video stream does not open (\(FFmpegIO.message(opened)))") }
    }

    /// Reads packets of the video stream until the decoder returns a frame, then converts it to RGB.
    private func firstFrameRGB(streamIndex: Int32, width: Int, height: Int) throws(MediaError) -> [UInt8] {
        guard let format = container?.format, let codec, let packet = av_packet_alloc() else {
            throw FFmpegIO.failure("av_packet_alloc", shim_averror(ENOMEM))
        }
        self.packet = packet
        guard let frame = av_frame_alloc() else { throw FFmpegIO.failure("av_frame_alloc", shim_averror(ENOMEM)) }
        self.frame = frame
        let again = shim_averror(EAGAIN)
        var packets = 0
        var decoded = false
        while !decoded {
            let read = av_read_frame(format, packet)
            if read < 0 {
                // End of the container (or a damaged tail): drain what the decoder holds.
                _ = avcodec_send_packet(codec, nil)
                decoded = avcodec_receive_frame(codec, frame) == 0
                break
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            packets += 1
            guard packets <= Self.maxPacketsForFirstFrame else { break }
            let sent = avcodec_send_packet(codec, packet)
            guard sent >= 0 || sent == again else { continue }  // a damaged packet: try the next one
            let received = avcodec_receive_frame(codec, frame)
            if received == 0 {
                decoded = true
            } else if received != again {
                continue
            }
        }
        guard decoded else { throw .unsupportedMedia(reason: "no frame of the video stream decodes") }
        guard Int(frame.pointee.width) == width, Int(frame.pointee.height) == height else {
            throw .unsupportedMedia(reason: "the first frame's size differs from the stream's")
        }
        return try convertToRGB(frame)
    }

    /// Converts `frame` to packed RGB24 with libswscale, honouring the frame's YUV matrix and range.
    private func convertToRGB(_ frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> [UInt8] {
        let (width, height) = (frame.pointee.width, frame.pointee.height)
        guard
            let scaler = sws_getContext(
                width, height, AVPixelFormat(rawValue: frame.pointee.format), width, height, AV_PIX_FMT_RGB24,
                SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nil, nil, nil)
        else {
            throw .unsupportedMedia(reason: "the frame's pixel format cannot be converted")
        }
        self.scaler = scaler
        var colorspace = Int32(frame.pointee.colorspace.rawValue)
        if frame.pointee.colorspace == AVCOL_SPC_UNSPECIFIED || frame.pointee.colorspace == AVCOL_SPC_RGB {
            // Unlabelled: HD and larger are BT.709 by convention (ITU-R BT.709), smaller BT.601.
            colorspace = height >= 720 ? SWS_CS_ITU709 : SWS_CS_DEFAULT
        }
        let fullRange: Int32 = frame.pointee.color_range == AVCOL_RANGE_JPEG ? 1 : 0
        _ = sws_setColorspaceDetails(
            scaler, sws_getCoefficients(colorspace), fullRange, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16)
        guard let rgb = av_frame_alloc() else { throw FFmpegIO.failure("av_frame_alloc", shim_averror(ENOMEM)) }
        rgbFrame = rgb
        rgb.pointee.width = width
        rgb.pointee.height = height
        rgb.pointee.format = AV_PIX_FMT_RGB24.rawValue
        let scaled = sws_scale_frame(scaler, rgb, frame)
        guard scaled >= 0, let data = rgb.pointee.data.0 else { throw FFmpegIO.failure("sws_scale_frame", scaled) }
        let stride = Int(rgb.pointee.linesize.0)
        let rowBytes = Int(width) * 3
        var pixels = [UInt8](repeating: 0, count: rowBytes * Int(height))
        pixels.withUnsafeMutableBytes { out in
            for row in 0..<Int(height) {
                (out.baseAddress! + row * rowBytes).copyMemory(from: data + row * stride, byteCount: rowBytes)
            }
        }
        return pixels
    }

    // MARK: Facts from the container

    /// Clockwise display rotation in degrees (0, 90, 180, 270) from the stream's display matrix
    /// (ISO/IEC 14496-12 §8.3.2 `tkhd` matrix; libavutil reports it counter-clockwise).
    private static func rotation(of stream: UnsafeMutablePointer<AVStream>) -> Int {
        var size = 0
        guard let matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 9 * 4 else { return 0 }
        let counterClockwise = matrix.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
        guard counterClockwise.isFinite else { return 0 }
        let clockwise = Int((-counterClockwise / 90).rounded()) * 90
        return ((clockwise % 360) + 360) % 360
    }

    private static func pixelAspect(stream: UnsafeMutablePointer<AVStream>, parameters: UnsafeMutablePointer<AVCodecParameters>)
        -> Double
    {
        for ratio in [stream.pointee.sample_aspect_ratio, parameters.pointee.sample_aspect_ratio]
        where ratio.num > 0 && ratio.den > 0 {
            let value = Double(ratio.num) / Double(ratio.den)
            if value > 0.1 && value < 10 { return value }
        }
        return 1
    }

    /// The container's duration, else the stream's, in milliseconds (rounded); nil if neither is stated.
    private static func durationMs(format: UnsafeMutablePointer<AVFormatContext>, stream: UnsafeMutablePointer<AVStream>)
        -> Int?
    {
        let unknown = shim_av_nopts_value()
        if format.pointee.duration != unknown, format.pointee.duration > 0 {
            return Int((format.pointee.duration + 500) / 1000)  // AV_TIME_BASE is microseconds
        }
        let base = stream.pointee.time_base
        if stream.pointee.duration != unknown, stream.pointee.duration > 0, base.den > 0 {
            return Int((Double(stream.pointee.duration) * Double(base.num) * 1000 / Double(base.den)).rounded())
        }
        return nil
    }
}

@available(*, unavailable)
extension VideoDecoder: Sendable {}
