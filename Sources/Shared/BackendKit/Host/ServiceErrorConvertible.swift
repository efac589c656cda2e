import Wire

/// An error that stands for a `ServiceError` a client should see (a database that is down is
/// 503, not 500). `ServiceHost` replies with `serviceError` when it is not nil.
public protocol ServiceErrorConvertible: Error {
    /// The reply's error, nil for an internal error (500).
    var serviceError: ServiceError? { get }
}
