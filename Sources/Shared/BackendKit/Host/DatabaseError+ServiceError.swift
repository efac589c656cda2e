import Storage
import Wire

/// How the service host answers a request that failed in the database: the storage layer
/// reports what happened (`DatabaseError.Kind`), the host chooses the reply.
extension DatabaseError: ServiceErrorConvertible {
    /// A lost connection is 503 `service_unavailable` (retry after 1 s); a statement that ran
    /// past the request's deadline is 504 `deadline_exceeded`; text the engine cannot hold
    /// (U+0000 on PostgreSQL) is 400 `invalid_field`; anything else is not a client-visible
    /// condition (nil: 500).
    public var serviceError: ServiceError? {
        switch kind {
        case .connectionLost:
            ServiceError(.serviceUnavailable, message: "the database is unavailable", status: 503, retryAfter: 1)
        case .timeout:
            ServiceError(.deadlineExceeded, message: "deadline passed in the database", status: 504)
        case .invalidText:
            ServiceError(.invalidField, message: "a text value holds U+0000 (NUL), which is not allowed", status: 400)
        case .uniqueViolation, .deadlock, .serializationFailure, .busy, .other: nil
        }
    }
}

extension WriteDeadlinePassed: ServiceErrorConvertible {
    /// 504 `deadline_exceeded`: the caller has given up.
    public var serviceError: ServiceError? {
        ServiceError(.deadlineExceeded, message: "deadline passed while waiting for the database", status: 504)
    }
}
