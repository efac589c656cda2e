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

/// Waits for one socket and one plain descriptor (a `Wakeup`) with as few system calls as the
/// socket allows: one `poll(2)` on the socket's `ZMQ_FD` and the descriptor, where `zmq_poll`
/// makes three or four (its own `poll` twice, and a `poll` inside each `ZMQ_EVENTS` it asks).
///
/// `ZMQ_FD` fires for commands, not messages (zmq_getsockopt(3)): a socket read until it
/// refuses with `EAGAIN` has processed all of them, and its descriptor fires for the next. A
/// send on it may process them too, taking the signal of a message that arrived meanwhile, so
/// after one (`used()`) the wait asks `ZMQ_EVENTS` first. The owner reports the two:
/// `readDry()` after a receive found nothing, `used()` after a send.
public struct SocketWait {
    private let socket: ZMQSocket
    private var fds: [pollfd]
    /// Whether the socket was used since it was last read dry (or never read).
    private var mustAsk = true

    /// - Throws: `ZMQError` when the socket's `ZMQ_FD` cannot be read.
    public init(_ socket: ZMQSocket, _ fd: Int32) throws {
        self.socket = socket
        let events = Int16(POLLIN)
        fds = [pollfd(fd: try socket.fileDescriptor(), events: events, revents: 0), pollfd(fd: fd, events: events, revents: 0)]
    }

    /// The socket was received from until it had nothing.
    public mutating func readDry() { mustAsk = false }

    /// The socket was sent on.
    public mutating func used() { mustAsk = true }

    /// Waits until the socket may have a message or the descriptor is readable, or `timeoutMs`
    /// passes (-1 waits forever). - Returns: whether to read the socket, and whether the
    /// descriptor fired (both false on timeout or `EINTR`).
    /// - Throws: `ZMQError` (`.contextTerminated` when the context shut down).
    public mutating func wait(timeoutMs: Int) throws -> (socket: Bool, fd: Bool) {
        if mustAsk {
            mustAsk = false
            if try socket.events() & ZMQ_POLLIN != 0 { return (true, false) }
        }
        fds[0].revents = 0
        fds[1].revents = 0
        let rc = Glibc.poll(&fds, 2, Int32(clamping: timeoutMs))
        if rc < 0 {
            if errno == EINTR { return (false, false) }
            throw ZMQError.current("poll")
        }
        return (fds[0].revents != 0, fds[1].revents != 0)
    }
}
