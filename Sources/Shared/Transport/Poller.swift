import CZMQ

#if canImport(Glibc)
    import Glibc
#endif

/// What a `Poller` waits on: a socket or a plain file descriptor (e.g. a `Wakeup`).
public enum PollItem {
    case socket(ZMQSocket)
    case fd(Int32)
}

/// `zmq_poll` over sockets and file descriptors, for one thread's loop.
public struct Poller {
    private var items: [PollItem]

    public init(_ items: [PollItem]) { self.items = items }

    /// Waits until an item is readable or `timeoutMs` passes (-1 waits forever).
    /// - Returns: for each item, whether it is readable (same order as given).
    /// - Throws: `ZMQError` (`.contextTerminated` when the context shut down). EINTR returns all-false.
    public func poll(timeoutMs: Int) throws -> [Bool] {
        var raw = items.map { item -> zmq_pollitem_t in
            switch item {
            case .socket(let s): return zmq_pollitem_t(socket: s.raw, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
            case .fd(let fd): return zmq_pollitem_t(socket: nil, fd: fd, events: Int16(ZMQ_POLLIN), revents: 0)
            }
        }
        let rc = zmq_poll(&raw, Int32(raw.count), timeoutMs)
        if rc < 0 {
            if zmq_errno() == EINTR { return Array(repeating: false, count: raw.count) }
            throw ZMQError.current("zmq_poll")
        }
        return raw.map { ($0.revents & Int16(ZMQ_POLLIN)) != 0 }
    }
}
