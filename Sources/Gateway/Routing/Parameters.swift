/// A route's path parameters, percent-decoded; each read throws when missing (Hummingbird's
/// `require`), so a template and its handler cannot drift apart silently.
struct Parameters: Sendable {
    var values: [String: String]

    /// - Throws: 500 when the route has no such parameter (a programming error).
    func require(_ name: String) throws -> String {
        guard let value = values[name] else { throw Problem.internalError() }
        return value
    }
}
