/// The query string's parameters, percent-decoded (`+` is a space); the last of a repeated
/// name wins.
struct Query: Sendable {
    var values: [String: String] = [:]

    /// - Throws: `Problem` 400 `invalid_query` for an invalid escape.
    init(_ raw: String?) throws {
        guard let raw, !raw.isEmpty else { return }
        for pair in raw.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentDecoding.decode(parts[0], plusIsSpace: true),
                let value = PercentDecoding.decode(parts.count > 1 ? parts[1] : "", plusIsSpace: true)
            else {
                throw Problem(status: 400, code: .invalidQuery, detail: "the query string holds an invalid percent-escape")
            }
            values[name] = value
        }
    }

    subscript(_ name: String) -> String? { values[name] }
}
