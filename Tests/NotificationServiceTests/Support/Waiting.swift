import Foundation

/// A condition that did not hold before its deadline.
struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Polls `condition` (every 5 ms) until it holds. Waits on a condition, never on the clock
/// alone: a fast machine returns at once, a loaded one takes what it takes.
/// - Parameters:
///   - what: names the condition in the error.
///   - seconds: the deadline (60 s: generous on a shared, loaded machine).
/// - Throws: `TimedOut` when the condition still does not hold at the deadline, or what
///   `condition` throws.
func waitUntil(
    _ what: @autoclosure () -> String, seconds: Double = 60, _ condition: () async throws -> Bool
) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while try await !condition() {
        guard Date() < deadline else { throw TimedOut(description: "not within \(Int(seconds)) s: \(what())") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Runs `body` for each of `items` with at most `width` running at once (bursts that do not
/// queue more than a loaded machine can start).
func forEach<T: Sendable>(
    _ items: [T], width: Int = 8, _ body: @escaping @Sendable (T) async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(width, items.count) {
            let item = items[next]
            group.addTask { try await body(item) }
            next += 1
        }
        while try await group.next() != nil {
            if next < items.count {
                let item = items[next]
                group.addTask { try await body(item) }
                next += 1
            }
        }
    }
}
