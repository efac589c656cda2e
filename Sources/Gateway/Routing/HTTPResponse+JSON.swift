import Wire

extension HTTPResponse {
    /// A JSON reply of an `Encodable` API shape (explicit nulls; see `JSONWriter`), its media links
    /// written as `PublicLinks` says.
    /// - Throws: `EncodingError` for a non-finite number (a programming error).
    static func json<T: Encodable>(_ status: Int, _ value: T) throws -> HTTPResponse {
        .json(status: status, bytes: PublicLinks.current.absolutized(try JSONWriter.encode(value)))
    }

    /// A 200 JSON reply of an `Encodable` API shape.
    static func json<T: Encodable>(_ value: T) throws -> HTTPResponse { try .json(200, value) }
}
