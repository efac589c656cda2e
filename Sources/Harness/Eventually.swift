import Foundation
import Support

/// A condition that did not hold before its deadline: the test fails with it rather than going
/// on as if it had held.
public struct TimedOut: Error, CustomStringConvertible {
    /// What was waited for.
    public var what: String
    /// The deadline, in seconds.
    public var seconds: Double

    public init(what: String, seconds: Double) {
        self.what = what
        self.seconds = seconds
    }

    public var description: String { "not within \(Int(seconds)) s: \(what)" }
}

/// Polls `condition` every `intervalMs` until it holds: the one polling wait of the tests,
/// benchmarks and load test. It waits on a condition, never on the clock alone: a fast machine
/// returns at once, a loaded one takes what it takes. The deadline bounds a broken run; it does
/// not time the behaviour, so it is generous (60 s by default: a restart or a catch-up can take
/// seconds on a shared, loaded machine).
/// - Parameters:
///   - what: names the condition in the error (evaluated only then).
///   - seconds: the deadline.
///   - intervalMs: how soon a change is seen; the outcome never depends on it.
/// - Throws: `TimedOut` when the condition still does not hold at the deadline, or what
///   `condition` throws.
public func eventually(
    _ what: @autoclosure () -> String, within seconds: Double = 60, intervalMs: Int = 20,
    _ condition: () async throws -> Bool
) async throws {
    _ = try await eventuallyValue(what(), within: seconds, intervalMs: intervalMs) { try await condition() ? () : nil }
}

/// Polls `probe` every `intervalMs` until it returns a value, and returns that value (see
/// `eventually`).
/// - Throws: `TimedOut` when `probe` still returns nil at the deadline, or what it throws.
public func eventuallyValue<T>(
    _ what: @autoclosure () -> String, within seconds: Double = 60, intervalMs: Int = 20,
    _ probe: () async throws -> T?
) async throws -> T {
    let end = Date().addingTimeInterval(seconds)
    while true {
        if let value = try await probe() { return value }
        guard Date() < end else { throw TimedOut(what: what(), seconds: seconds) }
        try await Task.sleep(for: .milliseconds(intervalMs))
    }
}

/// Runs `operation`, throwing if it has not finished after `seconds`; `onTimeout` runs first then
/// (e.g. to kill a child process the operation is waiting for, which lets it finish).
@discardableResult
public func withDeadline<T: Sendable>(
    _ what: String, seconds: Double = 60, onTimeout: @escaping @Sendable () -> Void = {},
    operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let settled = Locked(false)
    let settle: @Sendable () -> Bool = {
        settled.withLock { done in
            defer { done = true }
            return !done
        }
    }
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let timer = Task {
            try? await Task.sleep(for: .seconds(seconds))
            if settle() {
                onTimeout()
                continuation.resume(throwing: TimedOut(what: what, seconds: seconds))
            }
        }
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            if settle() { continuation.resume(with: result) }
            timer.cancel()
        }
    }
}

/// Runs blocking work (waiting for a child process) on its own thread, not on the cooperative pool.
public func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
