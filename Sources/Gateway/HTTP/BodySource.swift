/// A response body of known length produced chunk by chunk (e.g. a large file read from a
/// service in pieces): the server asks for the next chunk only once the previous one is written,
/// so a connection holds one chunk at a time, however large the body. Sent with
/// `Content-Length: length`; a chunk that is missing (nil, an error) or would overrun the length
/// ends the connection, which the client sees as a short body.
struct BodySource: Sendable {
    /// The body's length in bytes.
    var length: Int
    /// The largest chunk `next` returns, in bytes: what the server holds of its response budget
    /// before asking for one (a larger chunk is counted as it is).
    var chunkLimit = 1 << 20
    /// The next chunk (non-empty).
    var next: @Sendable () async throws -> [UInt8]?
}
