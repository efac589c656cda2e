import CZMQ
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An eventfd that another thread signals to wake a socket loop blocked on it (`Poller.poll`,
/// `SocketWait.wait`, or the gateway's epoll loop).
///
/// This is how async code hands work to a thread that owns sockets without touching them:
/// it appends to a locked queue and calls `signal()`; the loop polls `fd`, calls `drain()`
/// and then empties the queue. Signals between two drains cost one `write(2)`: under load
/// most signals find the loop already woken and make no system call at all.
public final class Wakeup: Sendable {
    // The fd is immutable; eventfd reads and writes are thread-safe system calls.
    public let fd: Int32
    /// Set by the first signal after a drain, cleared by the drain.
    private let pending = Atomic<Bool>(false)

    public init() {
        fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        precondition(fd >= 0, "eventfd failed: errno \(errno)")
    }

    /// Wakes the loop. Safe from any thread.
    public func signal() {
        guard !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Clears the signal; called by the loop after it wakes and before it empties its queue,
    /// so that anything queued after this point signals again.
    public func drain() {
        // Read first, then clear: a signal between the two finds `pending` still set and writes
        // nothing, but its work was queued before it and is taken after this drain; clearing
        // first would let that signal's write be swallowed by the read, leaving `pending` set
        // with nothing to wake the loop.
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
        pending.store(false, ordering: .sequentiallyConsistent)
    }

    deinit { close(fd) }
}
