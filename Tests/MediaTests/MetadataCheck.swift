import TestSupport
import Testing

@testable import Media

/// Checks that an encoded variant carries no metadata, seen two independent ways: libvips's header fields
/// (what its loaders extracted) and exiftool's full tag list.
enum MetadataCheck {
    /// libvips fields that hold metadata blocks or values parsed from them.
    static let vipsMetadataFields = ["exif-data", "xmp-data", "iptc-data", "icc-profile-data", "orientation"]

    /// libvips's metadata-bearing field names in `bytes` (empty when clean).
    static func vipsFields(_ bytes: [UInt8]) throws -> [String] {
        try Fixtures.load(bytes).fieldNames().filter { name in
            vipsMetadataFields.contains(name) || name.hasPrefix("exif-") || name.hasPrefix("xmp-") || name.hasPrefix("iptc-")
        }
    }

    /// exiftool tags outside the allowed groups, and any tag that mentions GPS or orientation.
    static func exiftoolTags(_ bytes: [UInt8]) throws -> [String] { try MediaFiles.metadataTags(bytes) }

    /// Expects no metadata in `bytes` by either check.
    static func expectClean(_ bytes: [UInt8], _ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fields = try vipsFields(bytes)
        #expect(fields.isEmpty, "\(label): libvips still sees \(fields)", sourceLocation: sourceLocation)
        let tags = try exiftoolTags(bytes)
        #expect(tags.isEmpty, "\(label): exiftool still sees \(tags)", sourceLocation: sourceLocation)
    }
}
