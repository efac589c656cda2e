import Foundation
import TestSupport
import Testing

@testable import Media

/// Videos through `MediaProcessor`: container check, duration, displayed size, poster and thumbnail.
/// The clips are made by the `ffmpeg` tool (Debian `ffmpeg`) at test time.
struct VideoTests {
    let processor: MediaProcessor

    init() throws {
        processor = try MediaProcessor()
    }

    /// Issue 18: a 2 s MP4 whose `mvhd` and `mdhd` claim 10 h is reported at what was stored, 2 s.
    @Test func theDurationIsWhatWasStoredNotWhatTheHeaderClaims() throws {
        var upload = try MediaFiles.video(width: 320, height: 240, seconds: 2, container: "mp4")
        var patched = 0
        // Version-0 boxes: after the type, version+flags, creation, modification (4 each), then
        // timescale and duration (big-endian 32-bit).
        for box in ["mvhd", "mdhd"] {
            let name = Array(box.utf8)
            var i = 0
            while i + 24 <= upload.count {
                if Array(upload[i..<i + 4]) == name, upload[i + 4] == 0 {
                    let t = i + 16
                    let timescale = upload[t..<t + 4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    let claimed = UInt32(truncatingIfNeeded: timescale * 36_000)
                    for k in 0..<4 { upload[t + 4 + k] = UInt8(claimed >> (24 - 8 * k) & 0xFF) }
                    patched += 1
                }
                i += 1
            }
        }
        #expect(patched >= 2)
        let media = try processor.process(upload, declaredContentType: "video/mp4")
        let duration = try #require(media.durationMs)
        #expect(abs(duration - 2000) <= 100, "duration \(duration) ms")
        let again = try processor.process(media.variant(.original)!.bytes)
        #expect(abs((again.durationMs ?? 0) - duration) <= 100)
    }

    @Test func mp4() throws {
        let upload = try MediaFiles.video(width: 320, height: 240, seconds: 2, container: "mp4")
        #expect(MediaType.sniff(upload) == .mp4)
        let media = try processor.process(upload, declaredContentType: "video/mp4")
        #expect(media.kind == .video && media.sourceType == .mp4)
        #expect("\(media.width)x\(media.height)" == "320x240")
        let duration = try #require(media.durationMs)
        #expect(abs(duration - 2000) <= 50, "duration \(duration) ms")
        #expect(media.variants.map(\.variant) == [.original, .poster, .square320])
        // The original is the upload's streams in a new container: it reads back the same.
        let original = media.variant(.original)!
        #expect(original.contentType == "video/mp4" && MediaType.sniff(original.bytes) == .mp4)
        let again = try processor.process(original.bytes)
        #expect("\(again.width)x\(again.height)" == "320x240" && abs((again.durationMs ?? 0) - duration) <= 50)
        #expect(try processor.process(upload).variant(.original)!.bytes == original.bytes)  // bitexact
        let poster = try Fixtures.load(media.variant(.poster)!.bytes)
        #expect("\(poster.width)x\(poster.height)" == "320x240")
        #expect(media.variant(.poster)!.contentType == "image/jpeg")
        let square = try Fixtures.load(media.variant(.square320)!.bytes)
        #expect("\(square.width)x\(square.height)" == "320x320")
        // testsrc2 is colourful: the poster is a real frame, not a blank one.
        let samples = [(40, 40), (160, 120), (280, 200)].map { Fixtures.pixel(poster, $0.0, $0.1) }
        #expect(Set(samples.map { $0.map { Int($0) / 32 } }).count > 1, "poster looks uniform: \(samples)")
        try MetadataCheck.expectClean(media.variant(.poster)!.bytes, "poster")
    }

    /// A phone-style clip: stored landscape (red left, blue right) with a display matrix turning it a
    /// quarter turn; reported and postered upright, turned the way exiftool reads the matrix.
    @Test func rotatedQuickTime() throws {
        let landscape = try MediaFiles.video(width: 320, height: 240, seconds: 1, container: "mp4", halves: true)
        let (upload, clockwise) = try MediaFiles.rotated(landscape, rotateTag: 90)
        #expect(clockwise == 90 || clockwise == 270, "exiftool reads a rotation of \(clockwise)")
        #expect(MediaType.sniff(upload) == .quicktime)
        let media = try processor.process(upload, declaredContentType: "video/quicktime")
        #expect(media.sourceType == .quicktime)
        #expect(media.variant(.original)!.contentType == "video/quicktime")
        #expect("\(media.width)x\(media.height)" == "240x320")
        // The copy keeps the display matrix: it is still shown upright.
        let again = try processor.process(media.variant(.original)!.bytes)
        #expect(again.sourceType == .quicktime && "\(again.width)x\(again.height)" == "240x320")
        let poster = try Fixtures.load(media.variant(.poster)!.bytes)
        #expect("\(poster.width)x\(poster.height)" == "240x320")
        // Turned clockwise, the left (red) edge becomes the top; anticlockwise, the bottom.
        let top = Fixtures.pixel(poster, 120, 40)
        let bottom = Fixtures.pixel(poster, 120, 280)
        let (expectedTop, expectedBottom) = clockwise == 90 ? (0, 2) : (2, 0)
        #expect(top[expectedTop] > 180 && bottom[expectedBottom] > 180, "top \(top), bottom \(bottom)")
    }

    /// Where a phone filmed a clip, its make, model and capture time are in the upload (exiftool reads
    /// them) and nowhere in what is stored; the streams are copied, not re-encoded.
    @Test func aClipsLocationAndDeviceAreNotKept() throws {
        let upload = try MediaFiles.withLocation(try MediaFiles.video(width: 320, height: 240, seconds: 1, container: "mp4"))
        let before = try MediaFiles.exiftool(upload)
        #expect(before["UserData:GPSCoordinates"] != nil && before["UserData:Model"] != nil, "fixture: \(before.keys.sorted())")
        let media = try processor.process(upload, declaredContentType: "video/quicktime")
        let original = media.variant(.original)!.bytes
        let after = try MediaFiles.exiftool(original)
        let leaked = after.keys.filter { key in
            ["GPS", "Make", "Model", "Location", "Software", "Encoder"].contains { key.contains($0) }
        }
        #expect(leaked.isEmpty, "left in the stored video: \(leaked.sorted())")
        #expect((after["QuickTime:CreateDate"] as? String ?? "").hasPrefix("2026") == false)
        #expect(!String(decoding: original, as: UTF8.self).contains("iPhone"))
        let frames = try #require(after["Track1:ImageWidth"] as? Int)
        #expect(frames == 320)
    }

    @Test func audioOnlyIsRefused() throws {
        let upload = try MediaFiles.video(width: 0, height: 0, seconds: 1, container: "mp4", audioOnly: true)
        #expect(MediaType.sniff(upload) == .mp4)  // the brand says MP4 ...
        #expect {
            _ = try processor.process(upload)  // ... but there is no picture
        } throws: { error in
            guard case .unsupportedMedia(let reason) = error as? MediaError else { return false }
            return reason.contains("no video stream")
        }
    }

    @Test func truncatedVideoIsRefused() throws {
        let whole = try MediaFiles.video(width: 320, height: 240, seconds: 1, container: "mp4")
        // `-f mp4` writes the index (moov) last: without it nothing is playable.
        let truncated = Array(whole.prefix(whole.count / 2))
        #expect(MediaType.sniff(truncated) == .mp4)
        #expect {
            _ = try processor.process(truncated)
        } throws: { error in
            guard case .unsupportedMedia = error as? MediaError else { return false }
            return true
        }
    }

    /// Just the `ftyp` box: sniffs as MP4, is not a container.
    @Test func headerOnlyIsRefused() throws {
        let bytes = SniffingTests.ftyp("isom", ["isom", "mp41"])
        #expect(throws: MediaError.self) { _ = try processor.process(bytes) }
    }
}
