import Foundation
import Harness
import Support
import TestSupport

/// Polls `condition` until it holds, throwing (never returning silently) when `seconds` pass
/// first. The deadline is generous on purpose: it bounds a broken test, it does not time the
/// behaviour (on a loaded machine a restart or a catch-up can take seconds).
func eventually(
    _ what: String, seconds: Double = 60, _ condition: @Sendable () async throws -> Bool
) async throws {
    let end = Date().addingTimeInterval(seconds)
    while true {
        if try await condition() { return }
        if Date() > end { throw TestSupportError("not within \(Int(seconds)) s: \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Runs `operation`, throwing if it has not finished after `seconds`; `onTimeout` runs first then
/// (e.g. to kill a child process the operation is waiting for, which lets it finish).
func withDeadline<T: Sendable>(
    _ what: String, seconds: Double, onTimeout: @escaping @Sendable () -> Void = {},
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
                continuation.resume(throwing: TestSupportError("not within \(Int(seconds)) s: \(what)"))
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
func onThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
