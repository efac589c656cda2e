import CZMQ

#if canImport(Glibc)
    import Glibc
#endif

/// An error from libzmq, keeping the facts: the errno, the operation that failed and libzmq's own text.
///
/// Callers branch on the named cases; everything else is `.failed`.
public enum ZMQError: Error, Equatable, CustomStringConvertible, Sendable {
    /// EAGAIN: the operation would block (a non-blocking send or receive found nothing to do).
    case wouldBlock(operation: String)
    /// ETERM: the context was shut down; loops stop when they see this.
    case contextTerminated(operation: String)
    /// EINTR that was not retried (only surfaced by calls that must not loop).
    case interrupted(operation: String)
    /// Any other failure: `errno` and `zmq_strerror` text.
    case failed(operation: String, errno: Int32, message: String)

    /// Builds the error for the current `zmq_errno()`.
    /// - Parameter operation: the libzmq call that failed, e.g. `"zmq_bind tcp://127.0.0.1:5551"`.
    public static func current(_ operation: String) -> ZMQError {
        let code = zmq_errno()
        switch code {
        case EAGAIN: return .wouldBlock(operation: operation)
        case ETERM: return .contextTerminated(operation: operation)
        case EINTR: return .interrupted(operation: operation)
        default: return .failed(operation: operation, errno: code, message: String(cString: zmq_strerror(code)))
        }
    }

    public var description: String {
        switch self {
        case .wouldBlock(let op): return "\(op): would block (EAGAIN)"
        case .contextTerminated(let op): return "\(op): context terminated (ETERM)"
        case .interrupted(let op): return "\(op): interrupted (EINTR)"
        case .failed(let op, let errno, let message): return "\(op): \(message) (errno \(errno))"
        }
    }
}
