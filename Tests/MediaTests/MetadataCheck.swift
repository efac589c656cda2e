import Testing

@testable import Media

/// Checks that an encoded variant carries no metadata, seen two independent ways: libvips's header fields
/// (what its loaders extracted) and exiftool's full tag list.
enum MetadataCheck {
    /// libvips fields that hold metadata blocks or values parsed from them.
    static let vipsMetadataFields = ["exif-data", "xmp-data", "iptc-data", "icc-profile-data", "orientation"]
    /// exiftool groups a stripped JPEG may have: the file system's, the decoder's and derived sizes.
    static let allowedExiftoolGroups: Set<String> = ["ExifTool", "System", "File", "Composite"]

    /// libvips's metadata-bearing field names in `bytes` (empty when clean).
    static func vipsFields(_ bytes: [UInt8]) throws -> [String] {
        try Fixtures.load(bytes).fieldNames().filter { name in
            vipsMetadataFields.contains(name) || name.hasPrefix("exif-") || name.hasPrefix("xmp-") || name.hasPrefix("iptc-")
        }
    }

    /// exiftool tags outside the allowed groups, and any tag that mentions GPS or orientation.
    static func exiftoolTags(_ bytes: [UInt8]) throws -> [String] {
        try Fixtures.exiftool(bytes).keys.filter { key in
            guard key != "SourceFile" else { return false }
            let group = key.split(separator: ":").first.map(String.init) ?? key
            return !allowedExiftoolGroups.contains(group) || key.contains("GPS") || key.contains("Orientation")
        }.sorted()
    }

    /// Expects no metadata in `bytes` by either check.
    static func expectClean(_ bytes: [UInt8], _ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fields = try vipsFields(bytes)
        #expect(fields.isEmpty, "\(label): libvips still sees \(fields)", sourceLocation: sourceLocation)
        let tags = try exiftoolTags(bytes)
        #expect(tags.isEmpty, "\(label): exiftool still sees \(tags)", sourceLocation: sourceLocation)
    }
}
