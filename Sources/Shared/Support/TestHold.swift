import Foundation

/// A point where a test can hold a background job, to stop or kill its process at a moment it
/// chose instead of racing it (e.g. `PROFILE_TEST_ERASURE_HOLD_FILE`): while the file at `path`
/// exists and holds a number no greater than the steps the job has done in this process, the
/// job waits before its next step, after logging `test.held` once with the count. Removing the
/// file (or writing a larger number) lets it go on. Without a path it never waits.
public struct TestHold: Sendable {
    public let path: String?
    /// How often the file is looked at while held, in ms.
    public var pollMs = 20

    public init(path: String?) { self.path = path }

    /// The number in the file, or nil when there is no file (or no number in it).
    func threshold() -> Int? {
        guard let path, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Waits while held after `done` steps (see the type); returns at once when not held or when
    /// the task is cancelled.
    public func wait(done: Int, logger: Logger, job: String) async {
        guard path != nil, let held = threshold(), held <= done else { return }
        logger.info("test.held", metadata: ["job": job, "steps": "\(done)"])
        while !Task.isCancelled, let n = threshold(), n <= done {
            try? await Task.sleep(for: .milliseconds(pollMs))
        }
    }
}
