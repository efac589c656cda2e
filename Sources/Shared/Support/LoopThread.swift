import Foundation

/// Marks the event-loop threads of the process (a thread-specific value, no lock), so code that
/// would otherwise hop to another thread and back for a short piece of work (a SQLite read) may
/// do it where it is. `LoopExecutor.bind()` marks its thread; `Database.read` asks.
public enum LoopThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// Marks the calling thread as a loop thread, for the rest of its life.
    public static func markCurrent() {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
    }

    /// Whether the caller runs on a thread `markCurrent()` marked.
    public static var isCurrent: Bool { pthread_getspecific(key) != nil }
}
