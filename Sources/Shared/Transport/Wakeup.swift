import CZMQ

#if canImport(Glibc)
    import Glibc
#endif

/// An eventfd that another thread signals to wake a socket loop blocked in `Poller.poll`.
///
/// This is how async code hands work to a thread that owns sockets without touching them:
/// it appends to a locked queue and calls `signal()`; the loop polls `fd`, calls `drain()`
/// and empties the queue.
public final class Wakeup: Sendable {
    // The fd is immutable; eventfd reads and writes are thread-safe system calls.
    public let fd: Int32

    public init() {
        fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(fd >= 0, "eventfd failed: errno \(errno)")
    }

    /// Wakes the loop. Safe from any thread.
    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Clears the signal; called by the loop after it wakes.
    public func drain() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }

    deinit { close(fd) }
}
