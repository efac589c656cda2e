import Foundation

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
