import Foundation
import Support

/// Media test files made at test time, shared by MediaTests and the gateway's end-to-end tests:
/// metadata blocks (EXIF with GPS and orientation, XMP, IPTC) written byte by byte from their
/// specifications, crafted PNG headers, and pictures and videos made by the `ffmpeg` and `vips`
/// command-line tools; exiftool's view of a file.
public enum MediaFiles {
    // MARK: Metadata blocks

    /// A JPEG with APP1 EXIF (orientation, camera make, GPS position), APP1 XMP (GPS again) and APP13
    /// IPTC (a city) inserted after the SOI marker of `jpeg` (ITU T.81 B.2; EXIF 2.32 §4.5.4; XMP part 3
    /// §1.1.3; Photoshop image resources 0x0404).
    public static func withMetadata(_ jpeg: [UInt8], orientation: UInt16) -> [UInt8] {
        precondition(jpeg.starts(with: [0xFF, 0xD8]))
        var out: [UInt8] = [0xFF, 0xD8]
        out += segment(0xE1, Array("Exif".utf8) + [0, 0] + exif(orientation: orientation))
        out += segment(0xE1, Array("http://ns.adobe.com/xap/1.0/".utf8) + [0] + Array(xmp.utf8))
        out += segment(0xED, photoshopIPTC())
        out += jpeg.dropFirst(2)
        return out
    }

    /// GPS position written into the fixtures: 48°51'24" N, 2°17'40" E.
    public static let latitude: [(UInt32, UInt32)] = [(48, 1), (51, 1), (2400, 100)]
    /// 2°17'40" E, as EXIF rationals.
    public static let longitude: [(UInt32, UInt32)] = [(2, 1), (17, 1), (4000, 100)]

    /// An XMP packet with GPS position and a creator.
    public static let xmp = """
        <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\
        <rdf:Description rdf:about="" xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/" \
        exif:GPSLatitude="48,51.4N" exif:GPSLongitude="2,17.6667E"><dc:creator><rdf:Seq><rdf:li>Test Person</rdf:li>\
        </rdf:Seq></dc:creator></rdf:Description></rdf:RDF></x:xmpmeta>
        """

    /// A JPEG marker segment: `FF marker`, the big-endian length, the payload (ITU T.81 B.1.1.4).
    public static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count + 2
        return [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// A big-endian TIFF structure (TIFF 6.0 §2): IFD0 with Make, Orientation and a GPS IFD pointer; the
    /// GPS IFD (EXIF 2.32 §4.6.6) with version, latitude and longitude.
    public static func exif(orientation: UInt16) -> [UInt8] {
        var data: [UInt8] = []
        func u16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func entry(_ tag: UInt16, _ type: UInt16, _ count: UInt32, _ value: [UInt8]) -> [UInt8] {
            u16(tag) + u16(type) + u32(count) + value + [UInt8](repeating: 0, count: 4 - value.count)
        }
        let ifd0Offset: UInt32 = 8
        let ifd0Size = UInt32(2 + 3 * 12 + 4)
        let gpsOffset = ifd0Offset + ifd0Size
        let gpsSize = UInt32(2 + 5 * 12 + 4)
        let makeOffset = gpsOffset + gpsSize
        let make = Array("TestCam\u{0}".utf8)
        let latitudeOffset = makeOffset + UInt32(make.count)
        let longitudeOffset = latitudeOffset + 24
        data += Array("MM".utf8) + u16(42) + u32(ifd0Offset)
        data += u16(3)
        data += entry(0x010F, 2, UInt32(make.count), u32(makeOffset))  // Make
        data += entry(0x0112, 3, 1, u16(orientation))  // Orientation
        data += entry(0x8825, 4, 1, u32(gpsOffset))  // GPSInfo IFD pointer
        data += u32(0)
        data += u16(5)
        data += entry(0x0000, 1, 4, [2, 3, 0, 0])  // GPSVersionID
        data += entry(0x0001, 2, 2, Array("N".utf8) + [0])  // GPSLatitudeRef
        data += entry(0x0002, 5, 3, u32(latitudeOffset))  // GPSLatitude
        data += entry(0x0003, 2, 2, Array("E".utf8) + [0])  // GPSLongitudeRef
        data += entry(0x0004, 5, 3, u32(longitudeOffset))  // GPSLongitude
        data += u32(0)
        data += make
        for (n, d) in latitude + longitude { data += u32(n) + u32(d) }
        return data
    }

    /// "Photoshop 3.0" image resources holding one IPTC-IIM record (2:90 City = "Paris").
    private static func photoshopIPTC() -> [UInt8] {
        let city = Array("Paris".utf8)
        var iptc: [UInt8] = [0x1C, 0x02, 90, 0, UInt8(city.count)] + city
        if iptc.count % 2 == 1 { iptc.append(0) }
        let size = UInt32(5 + city.count)
        return Array("Photoshop 3.0".utf8) + [0] + Array("8BIM".utf8) + [0x04, 0x04, 0, 0]
            + [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + iptc
    }

    // MARK: Crafted PNG

    /// A PNG whose IHDR declares `width` × `height` 8-bit RGB pixels but whose only IDAT is an empty zlib
    /// stream (RFC 2083 §4.1; RFC 1950/1951 stored block): a decompression bomb's header, a few dozen bytes.
    public static func pngHeaderBomb(width: UInt32, height: UInt32) -> [UInt8] {
        func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return u32(UInt32(data.count)) + body + u32(crc32(body))
        }
        let ihdr = u32(width) + u32(height) + [8, 2, 0, 0, 0]
        let emptyZlib: [UInt8] = [0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", emptyZlib)
            + chunk("IEND", [])
    }

    /// CRC-32 (ISO 3309, as PNG uses it: RFC 2083 §15).
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    // MARK: Tools

    /// A scratch directory for one test.
    public static func directory() -> String {
        let path = NSTemporaryDirectory() + "media-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs a command-line tool; returns its standard output. Fails the test with the install hint if
    /// the tool is missing (scripts/install-deps installs `ffmpeg` and `libimage-exiftool-perl`).
    public static func run(_ tool: String, _ arguments: [String], package: String) throws -> Data {
        let path = "/usr/bin/\(tool)"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ToolMissing(description: "\(path) is missing: install the Debian package \(package) (scripts/install-deps)")
        }
        let (termination, output) = try ChildProcess.output(path, arguments)
        guard termination == .exited(0) else {
            throw ToolMissing(description: "\(tool) \(arguments.joined(separator: " ")) ended with \(termination)")
        }
        return Data(output)
    }

    /// Makes a video with ffmpeg: `seconds` long, `width` × `height`, H.264 in the given container (`mp4`
    /// or `mov`). The picture is ffmpeg's `testsrc2` pattern, or with `halves` a red left half and a blue
    /// right half; `audioOnly` makes an AAC-only file instead.
    public static func video(
        width: Int, height: Int, seconds: Double, container: String, halves: Bool = false, audioOnly: Bool = false
    ) throws -> [UInt8] {
        let path = directory() + "/clip.\(container)"
        let input: [String]
        if audioOnly {
            input = ["-f", "lavfi", "-i", "sine=frequency=440:duration=\(seconds)", "-c:a", "aac"]
        } else {
            let source =
                halves
                ? "color=c=red:s=\(width)x\(height):r=25:d=\(seconds),drawbox=x=\(width / 2):y=0:w=\(width / 2):h=\(height):color=blue:t=fill"
                : "testsrc2=size=\(width)x\(height):rate=25:duration=\(seconds)"
            input = ["-f", "lavfi", "-i", source, "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "ultrafast"]
        }
        _ = try run("ffmpeg", ["-nostdin", "-v", "error", "-y"] + input + ["-f", container, path], package: "ffmpeg")
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Copies `video` into a QuickTime file whose video track carries a display matrix (as a phone
    /// writes for footage shot upright). FFmpeg 5.1 writes the matrix only when copying streams, from the
    /// legacy `rotate` tag; the resulting clockwise rotation is read back with exiftool, an independent
    /// reader, and returned with the bytes.
    public static func rotated(_ video: [UInt8], rotateTag: Int) throws -> (bytes: [UInt8], clockwise: Int) {
        let directory = directory()
        try Data(video).write(to: URL(fileURLWithPath: directory + "/in.mp4"))
        _ = try run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-y", "-i", directory + "/in.mp4", "-c", "copy", "-metadata:s:v:0",
                "rotate=\(rotateTag)",
                "-f", "mov", directory + "/out.mov",
            ], package: "ffmpeg")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.mov")))
        return (bytes, try exiftool(bytes)["Composite:Rotation"] as? Int ?? -1)
    }

    /// Copies `video` into a QuickTime file with what a phone records about a clip: where it was filmed
    /// (`location`, written as `©xyz`), the device's make and model, and the capture time.
    public static func withLocation(_ video: [UInt8]) throws -> [UInt8] {
        let directory = directory()
        try Data(video).write(to: URL(fileURLWithPath: directory + "/in.mp4"))
        _ = try run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-y", "-i", directory + "/in.mp4", "-c", "copy",
                "-metadata", "location=+35.6895+139.6917/", "-metadata", "make=Apple",
                "-metadata", "model=iPhone 15 Pro", "-metadata", "creation_time=2026-06-01T10:00:00Z",
                "-f", "mov", directory + "/located.mov",
            ], package: "ffmpeg")
        return Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/located.mov")))
    }

    /// exiftool's view of a file: tag names with their group (`-G1`: `GPS:GPSLatitude`, `IFD0:Orientation`,
    /// `XMP-exif:GPSLatitude`, `IPTC:City`, `ICC_Profile:…`), every tag including duplicates (`-a`).
    public static func exiftool(_ bytes: [UInt8]) throws -> [String: Any] {
        let path = directory() + "/file"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let json = try run("exiftool", ["-j", "-a", "-G1", "-n", path], package: "libimage-exiftool-perl")
        let list = try JSONSerialization.jsonObject(with: json) as? [[String: Any]]
        return list?.first ?? [:]
    }

    // MARK: Pictures from the command-line tools

    /// A `width` × `height` JPEG of ffmpeg's `testsrc2` pattern (quality about 90).
    public static func jpeg(width: Int, height: Int) throws -> [UInt8] {
        try picture(width: width, height: height, ext: "jpg", options: ["-q:v", "3"])
    }

    /// A `width` × `height` 8-bit RGB PNG of ffmpeg's `testsrc2` pattern.
    public static func png(width: Int, height: Int) throws -> [UInt8] {
        try picture(width: width, height: height, ext: "png", options: ["-pix_fmt", "rgb24"])
    }

    /// A `width` × `height` HEIC: a PNG made by ffmpeg, saved by the `vips` CLI (libvips-tools, through
    /// libheif and x265).
    public static func heic(width: Int, height: Int) throws -> [UInt8] {
        let directory = directory()
        try Data(try png(width: width, height: height)).write(to: URL(fileURLWithPath: directory + "/in.png"))
        _ = try run("vips", ["heifsave", directory + "/in.png", directory + "/out.heic", "--Q", "50"], package: "libvips-tools")
        return Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/out.heic")))
    }

    private static func picture(width: Int, height: Int, ext: String, options: [String]) throws -> [UInt8] {
        let path = directory() + "/picture.\(ext)"
        _ = try run(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(width)x\(height):rate=1:duration=1"]
                + ["-frames:v", "1"] + options + [path], package: "ffmpeg")
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    // MARK: Metadata left

    /// exiftool groups a stripped JPEG may have: the file system's, the decoder's and derived sizes.
    public static let allowedExiftoolGroups: Set<String> = ["ExifTool", "System", "File", "Composite"]

    /// exiftool tags in `bytes` outside the allowed groups, and any tag that mentions GPS or orientation
    /// (empty when the file carries no metadata).
    public static func metadataTags(_ bytes: [UInt8]) throws -> [String] {
        try exiftool(bytes).keys.filter { key in
            guard key != "SourceFile" else { return false }
            let group = key.split(separator: ":").first.map(String.init) ?? key
            return !allowedExiftoolGroups.contains(group) || key.contains("GPS") || key.contains("Orientation")
        }.sorted()
    }
}

/// A command-line tool the fixtures need is missing or failed; says which Debian package has it.
public struct ToolMissing: Error, CustomStringConvertible {
    /// What is missing or what failed.
    public let description: String
}
