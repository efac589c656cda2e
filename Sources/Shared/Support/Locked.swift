import Foundation

/// A value guarded by a lock (`NSLock`, a pthread mutex underneath).
///
/// Used instead of `Synchronization.Mutex` because on Linux that one is built on raw futex calls
/// that ThreadSanitizer cannot see, so every access through it reports as a race; the transport
/// tests run under TSan, and pthread mutexes are understood by it.
public final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only read or written while `lock` is held.
    private var value: Value
    private let lock = NSLock()

    public init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
