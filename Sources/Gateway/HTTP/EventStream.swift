import Support

/// The bounded outgoing buffer of one Server-Sent Events response, written by any task and
/// drained by the server's event loop.
///
/// An append wakes the loop (once per drain, however many appends), which writes what is
/// buffered as far as the socket takes it. When an append would take the buffer over
/// `capacity` bytes (a client that stopped reading) the stream stops taking data and closes
/// once what it holds is sent; the client resumes with `Last-Event-ID`. When the connection
/// goes away (the client closed it, at any moment), `finished()` runs the close action at once.
final class EventStream: Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var closed = false
        /// Wakes the loop for this stream; nil until the response is on its connection.
        var wake: (@Sendable () -> Void)?
        /// A wake is pending (the loop has not drained since).
        var scheduled = false
        var onClose: (@Sendable () -> Void)?
    }
    /// Buffer limit in bytes.
    let capacity: Int
    private let state = Locked(State())

    init(capacity: Int = 256 * 1024) { self.capacity = capacity }

    /// Sets the action run once when the stream closes, by either side.
    func setOnClose(_ body: @escaping @Sendable () -> Void) {
        let closedAlready = state.withLock { s -> Bool in
            if s.closed { return true }
            s.onClose = body
            return false
        }
        if closedAlready { body() }
    }

    /// Appends bytes; returns false (and closes the stream) if they do not fit the buffer.
    @discardableResult
    func append(_ bytes: [UInt8]) -> Bool {
        var wake: (@Sendable () -> Void)?
        var onClose: (@Sendable () -> Void)?
        let accepted = state.withLock { s -> Bool in
            if s.closed { return false }
            if s.buffer.count + bytes.count > capacity {
                s.closed = true
                onClose = s.onClose
                s.onClose = nil
            } else {
                s.buffer.append(contentsOf: bytes)
            }
            if !s.scheduled, let w = s.wake {
                s.scheduled = true
                wake = w
            }
            return !s.closed
        }
        wake?()
        onClose?()
        return accepted
    }

    /// Closes the stream once what it holds has been sent.
    func close() {
        var wake: (@Sendable () -> Void)?
        let onClose = state.withLock { s -> (@Sendable () -> Void)? in
            if s.closed { return nil }
            s.closed = true
            if !s.scheduled, let w = s.wake {
                s.scheduled = true
                wake = w
            }
            defer { s.onClose = nil }
            return s.onClose
        }
        wake?()
        onClose?()
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Bytes waiting to be sent.
    var pendingBytes: Int { state.withLock { $0.buffer.count } }

    // MARK: Event-loop side

    /// Connects the stream to its connection (after the response head is written).
    func attach(wake: @escaping @Sendable () -> Void) {
        let pending = state.withLock { s -> Bool in
            s.wake = wake
            s.scheduled = !s.buffer.isEmpty || s.closed
            return s.scheduled
        }
        if pending { wake() }
    }

    /// Takes what is buffered (the loop writes it). - Returns: the bytes, and whether the stream
    /// is closed (the connection ends once they are sent).
    func take() -> (bytes: [UInt8], closed: Bool) {
        state.withLock { s in
            s.scheduled = false
            defer { s.buffer = [] }
            return (s.buffer, s.closed)
        }
    }

    /// The connection went away: stop taking data, run the close action.
    func finished() {
        let onClose = state.withLock { s -> (@Sendable () -> Void)? in
            s.closed = true
            s.wake = nil
            s.buffer = []
            defer { s.onClose = nil }
            return s.onClose
        }
        onClose?()
    }
}
