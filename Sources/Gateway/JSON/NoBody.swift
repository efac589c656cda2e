/// The body of a route that takes none: every member is unknown (400 `unknown_field`, the
/// first one named), as other routes refuse members they do not take; an empty body or `{}`
/// is fine.
struct NoBody: Decodable {
    /// A key no member name fits.
    private struct NoMember: CodingKey {
        var stringValue: String { "" }
        var intValue: Int? { nil }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: NoMember.self)
    }
}
