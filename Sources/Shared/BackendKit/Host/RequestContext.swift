import Support
import Wire

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
    /// The service's logger, without this request's metadata.
    let serviceLogger: Logger

    /// - Parameter logger: the service's logger (this request's metadata is added to it).
    public init(correlationId: String, type: String, deadline: Int64, trace: String, logger: Logger) {
        self.correlationId = correlationId
        self.type = type
        self.deadline = deadline
        self.trace = trace
        self.serviceLogger = logger
    }

    /// The service's logger with this request's `request.id`, `trace` and `type` attached
    /// (built when asked for: most requests log nothing).
    public var logger: Logger {
        serviceLogger.with(["request.id": correlationId, "trace": trace, "type": type])
    }

    /// Milliseconds left before the deadline (may be negative).
    public var remainingMs: Int64 { deadline - Timestamp.nowMs() }
}
