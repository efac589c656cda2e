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
    ///
    /// Do not read a function-typed value (or an optional one) out with `withLock { $0 }`: the
    /// closure's `inout` parameter is reabstracted into the concrete function type and written
    /// back, so every such read wraps the stored closure in two more thunks, and calling it after
    /// n reads runs through 2n of them (measured: 20,000 reads, 5.8 s; a stack overflow later).
    /// Use `get()`, which reads in the generic context.
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// The value, read under the lock (safe for function types, see `withLock`).
    public func get() -> Value {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    /// Replaces the value under the lock.
    public func set(_ newValue: Value) {
        lock.lock()
        defer { lock.unlock() }
        value = newValue
    }
}
