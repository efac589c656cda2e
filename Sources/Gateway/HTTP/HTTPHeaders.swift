/// Header fields as received: names lower-cased, in order, repeats kept.
struct HTTPHeaders: Sendable {
    var fields: [(name: String, value: String)] = []

    /// The first value of `name` (lower-case), or nil.
    subscript(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of `name` (lower-case).
    func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }
}
