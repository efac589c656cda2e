import Foundation
import TestSupport
import Testing

@testable import Media

/// `MediaType.sniff` and the declared-type check: the type comes from the bytes alone.
struct SniffingTests {
    static func ftyp(_ major: String, _ compatible: [String]) -> [UInt8] {
        let size = UInt32(16 + 4 * compatible.count)
        var box: [UInt8] = [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        box += Array("ftyp".utf8) + Array(major.utf8) + [0, 0, 0, 0]
        for brand in compatible { box += Array(brand.utf8) }
        return box + [0, 0, 0, 8] + Array("free".utf8)
    }

    @Test func signatures() {
        #expect(MediaType.sniff([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]) == .jpeg)
        #expect(MediaType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0]) == .png)
        #expect(MediaType.sniff(Array("RIFF".utf8) + [1, 2, 3, 4] + Array("WEBPVP8 ".utf8)) == .webp)
        #expect(MediaType.sniff(Self.ftyp("heic", ["mif1", "heic"])) == .heic)
        #expect(MediaType.sniff(Self.ftyp("mif1", ["mif1", "heic"])) == .heic)
        #expect(MediaType.sniff(Self.ftyp("isom", ["isom", "iso2", "avc1", "mp41"])) == .mp4)
        #expect(MediaType.sniff(Self.ftyp("mp42", ["mp42", "isom"])) == .mp4)
        #expect(MediaType.sniff(Self.ftyp("qt  ", ["qt  "])) == .quicktime)
    }

    @Test func refusesOtherTypes() {
        #expect(MediaType.sniff([UInt8]()) == nil)
        #expect(MediaType.sniff(Array("hello, this is text\n".utf8)) == nil)
        #expect(MediaType.sniff(Array("GIF89a".utf8) + [0, 0, 0, 0]) == nil)
        #expect(MediaType.sniff(Array("<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8)) == nil)
        #expect(MediaType.sniff(Array("%PDF-1.7\n".utf8)) == nil)
        #expect(MediaType.sniff(Self.ftyp("avif", ["avif", "mif1"])) == nil)
        #expect(MediaType.sniff(Self.ftyp("mif1", ["mif1", "avif"])) == nil)
        #expect(MediaType.sniff(Self.ftyp("crx ", ["crx "])) == nil)
        #expect(MediaType.sniff([0xFF, 0xD8]) == nil)  // too short to be a JPEG
        #expect(MediaType.sniff(Array("RIFF".utf8) + [1, 2, 3, 4] + Array("WAVEfmt ".utf8)) == nil)
    }

    @Test func contentTypeNames() {
        #expect(MediaType(contentType: "image/jpeg") == .jpeg)
        #expect(MediaType(contentType: "Image/JPEG; charset=binary") == .jpeg)
        #expect(MediaType(contentType: "image/heif") == .heic)
        #expect(MediaType(contentType: "video/quicktime") == .quicktime)
        #expect(MediaType(contentType: "application/octet-stream") == nil)
        #expect(MediaType.allCases.allSatisfy { MediaType(contentType: $0.mimeType) == $0 })
    }

    /// Text named `.jpg` is refused from its bytes: 415 `unsupported_media`. The name is never an input.
    @Test func textNamedJPEGIsRefused() throws {
        let path = MediaFiles.directory() + "/holiday.jpg"
        try "this is not a picture\n".write(toFile: path, atomically: true, encoding: .utf8)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let processor = try MediaProcessor()
        #expect {
            _ = try processor.process(bytes, declaredContentType: "image/jpeg")
        } throws: { error in
            guard let error = error as? MediaError, case .unsupportedMedia = error else { return false }
            return error.httpStatus == 415 && error.code == "unsupported_media"
        }
    }

    /// A PNG declared as JPEG is refused (API.md: "a mismatch … → 415"); undeclared it is fine.
    @Test func declaredTypeMustMatch() throws {
        let png = try Fixtures.png(try Fixtures.image(Fixtures.busy(width: 8, height: 8), width: 8, height: 8))
        #expect(throws: MediaError.self) { try MediaProcessor.identify(png, declaredContentType: "image/jpeg") }
        #expect(try MediaProcessor.identify(png, declaredContentType: "image/png") == .png)
        #expect(try MediaProcessor.identify(png, declaredContentType: "application/octet-stream") == .png)
        #expect(try MediaProcessor.identify(png) == .png)
    }

    @Test func byteLimitsPerKind() {
        let photo = [0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0, count: MediaLimits.maxPhotoBytes)
        #expect(throws: MediaError.tooLarge(kind: .photo, bytes: photo.count, limitBytes: 20 * 1_048_576)) {
            try MediaProcessor.identify(photo)
        }
        #expect(MediaError.tooLarge(kind: .photo, bytes: 1, limitBytes: 0).httpStatus == 413)
        #expect(MediaLimits.maxVideoBytes == 100 * 1_048_576)
        #expect(MediaLimits.maxUploadBytes == MediaLimits.maxVideoBytes)
    }
}
