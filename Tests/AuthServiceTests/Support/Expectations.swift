import Support
import Testing
import Wire

/// Runs `body`, expecting a `ServiceError` with `code` and `status`; returns it for more checks.
@discardableResult
func expectError(
    _ code: String, status: Int, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> ServiceError? {
    do {
        try await body()
        Issue.record("expected \(status) \(code), got success", sourceLocation: sourceLocation)
        return nil
    } catch let error as ServiceError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.status == status, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected ServiceError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// A wait that ran out: the condition it waited for never held.
struct WaitTimedOut: Error, CustomStringConvertible {
    var what: String
    var seconds: Double
    var description: String { "gave up after \(seconds) s waiting for \(what)" }
}

/// Polls `condition` every `intervalMs` until it holds; throws `WaitTimedOut` after
/// `timeoutSeconds` (generous: the condition normally holds within milliseconds, and a busy
/// shared machine must not fail a test that is right). The poll interval only bounds how soon
/// the change is seen; the outcome never depends on it.
func waitUntil(
    _ what: String, timeoutSeconds: Double = 60, intervalMs: Int = 20,
    _ condition: () async throws -> Bool
) async throws {
    let end = Timestamp.nowMs() + Int64(timeoutSeconds * 1000)
    while true {
        if try await condition() { return }
        guard Timestamp.nowMs() < end else { throw WaitTimedOut(what: what, seconds: timeoutSeconds) }
        try await Task.sleep(for: .milliseconds(intervalMs))
    }
}

/// Runs `body`, failing with `WaitTimedOut` if it has not finished after `timeoutSeconds`
/// (for waits that TestSupport does not bound itself, e.g. a process that never prints READY).
/// After a timeout the body is cancelled and left behind; the test fails instead of hanging.
@discardableResult
func withTimeout<T: Sendable>(
    _ what: String, seconds: Double = 60, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let pending = Locked<CheckedContinuation<T, any Error>?>(continuation)
        let finish: @Sendable (Result<T, any Error>) -> Void = { result in
            pending.withLock { c in
                c?.resume(with: result)
                c = nil
            }
        }
        let work = Task {
            do { finish(.success(try await body())) } catch { finish(.failure(error)) }
        }
        Task {
            // Ends early once the work is done (its result is in), so nothing lingers.
            let end = Timestamp.nowMs() + Int64(seconds * 1000)
            while Timestamp.nowMs() < end, pending.withLock({ $0 != nil }) {
                try? await Task.sleep(for: .milliseconds(50))
            }
            finish(.failure(WaitTimedOut(what: what, seconds: seconds)))
            work.cancel()
        }
    }
}
