import CZMQ

/// A libzmq context. Thread-safe in libzmq, so `Sendable` is honest.
///
/// `shutdown()` makes every blocking call on its sockets return `ZMQError.contextTerminated`,
/// which is how socket loops stop. The context is terminated when the last reference goes away.
public final class ZMQContext: @unchecked Sendable {
    // @unchecked: libzmq documents contexts as thread-safe; the pointer is immutable after init.
    let handle: UnsafeMutableRawPointer

    /// Creates a context with `ioThreads` background I/O threads (libzmq default 1).
    public init(ioThreads: Int32 = 1) {
        guard let ctx = zmq_ctx_new() else { fatalError("zmq_ctx_new failed: out of memory") }
        zmq_ctx_set(ctx, ZMQ_IO_THREADS, ioThreads)
        zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 65_536)
        handle = ctx
    }

    /// Makes blocking calls on every socket of this context fail with ETERM. Idempotent.
    public func shutdown() {
        zmq_ctx_shutdown(handle)
    }

    deinit {
        // zmq_ctx_term blocks until every socket is closed; sockets keep the context alive,
        // so by the time this runs they are all gone.
        while zmq_ctx_term(handle) == -1 && zmq_errno() == EINTR {}
    }
}
