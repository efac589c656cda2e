import CMicroHTTPD
import Synchronization

/// The bounded outgoing buffer of one Server-Sent Events connection, read by libmicrohttpd's
/// content reader on the daemon thread and written by any task.
///
/// When the buffer is empty the reader suspends its connection (`MHD_suspend_connection`) and
/// returns 0; an append resumes it (`MHD_resume_connection`). No thread per stream and no busy
/// waiting. When an append would take the buffer over `capacity` bytes the stream stops taking
/// data and closes once what it holds is sent (the client resumes with `Last-Event-ID`).
final class EventStream: Sendable {
    private struct State {
        var buffer: [UInt8] = []
        var readOffset = 0
        var closed = false
        var suspended = false
        /// The connection, set when the response is queued (nil before).
        var connection: ConnectionHandle?
    }
    /// Buffer limit in bytes.
    let capacity: Int
    private let state = Mutex(State())
    /// Called once when the stream is closed (by either side).
    private let onClose = Mutex<(@Sendable () -> Void)?>(nil)

    init(capacity: Int = 256 * 1024) { self.capacity = capacity }

    /// Sets the action run once when the stream closes (unregisters it from the hub).
    func setOnClose(_ body: @escaping @Sendable () -> Void) { onClose.withLock { $0 = body } }

    /// Appends bytes; returns false (and closes the stream) if they do not fit the buffer.
    @discardableResult
    func append(_ bytes: [UInt8]) -> Bool {
        var resume: ConnectionHandle?
        let accepted = state.withLock { s -> Bool in
            if s.closed { return false }
            if s.buffer.count - s.readOffset + bytes.count > capacity {
                s.closed = true
            } else {
                s.buffer.append(contentsOf: bytes)
            }
            if s.suspended {
                s.suspended = false
                resume = s.connection
            }
            return !s.closed
        }
        if let resume { MHD_resume_connection(resume.pointer) }
        if !accepted { fireClose() }
        return accepted
    }

    /// Closes the stream once its buffer has been sent.
    func close() {
        var resume: ConnectionHandle?
        let wasOpen = state.withLock { s -> Bool in
            let was = !s.closed
            s.closed = true
            if s.suspended {
                s.suspended = false
                resume = s.connection
            }
            return was
        }
        if let resume { MHD_resume_connection(resume.pointer) }
        if wasOpen { fireClose() }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Bytes waiting to be sent.
    var pendingBytes: Int { state.withLock { $0.buffer.count - $0.readOffset } }

    private func fireClose() {
        let body = onClose.withLock { b -> (@Sendable () -> Void)? in
            defer { b = nil }
            return b
        }
        body?()
    }

    /// Called on the daemon thread when the response is queued.
    func attach(_ connection: OpaquePointer) {
        state.withLock { $0.connection = ConnectionHandle(pointer: connection) }
    }

    /// The content reader: copies up to `max` bytes into `buf`; suspends the connection and
    /// returns 0 when nothing is waiting; returns `MHD_CONTENT_READER_END_OF_STREAM` once closed
    /// and drained. Runs on the daemon thread only.
    func read(into buf: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        state.withLock { s -> Int in
            let available = s.buffer.count - s.readOffset
            if available > 0 {
                let n = min(available, max)
                s.buffer.withUnsafeBufferPointer { src in
                    UnsafeMutableRawPointer(buf).copyMemory(
                        from: src.baseAddress! + s.readOffset, byteCount: n)
                }
                s.readOffset += n
                if s.readOffset == s.buffer.count {
                    s.buffer.removeAll(keepingCapacity: s.buffer.capacity <= 16384)
                    s.readOffset = 0
                } else if s.readOffset > 65536 {
                    s.buffer.removeFirst(s.readOffset)
                    s.readOffset = 0
                }
                return n
            }
            if s.closed { return Int(MHD_CONTENT_READER_END_OF_STREAM) }
            guard let connection = s.connection else { return Int(MHD_CONTENT_READER_END_OF_STREAM) }
            // Suspend under the lock so a concurrent append's resume always follows it.
            s.suspended = true
            MHD_suspend_connection(connection.pointer)
            return 0
        }
    }

    /// The connection went away: stop taking data.
    func finished() {
        state.withLock { s in
            s.closed = true
            s.suspended = false
            s.connection = nil
        }
        fireClose()
    }
}
