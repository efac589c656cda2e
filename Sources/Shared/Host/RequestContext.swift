/// What a handler knows about the request it is answering.
public struct RequestContext: Sendable {
    /// The envelope's correlation id.
    public var correlationId: String
    /// The envelope's message type.
    public var type: String
    /// Absolute deadline, Unix ms.
    public var deadline: Int64
    /// Trace id, for logs and onward calls.
    public var trace: String
    /// Milliseconds left before the deadline (may be negative).
    public var remainingMs: Int64 { deadline - Timestamp.nowMs() }
}
