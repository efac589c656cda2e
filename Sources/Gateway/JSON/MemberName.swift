/// A member's name as a coding key that every name fits: for a body whose members are a map
/// (`{push: {like, ...}}`, names checked by the type itself) or one read before its shape is
/// known. The strict decoder (`RequestBodyDecoder`) refuses no member through it.
struct MemberName: CodingKey, Hashable {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
