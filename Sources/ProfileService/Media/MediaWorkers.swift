import Dispatch
import Media
import Shared

/// Runs blocking media work (decoding, encoding, file writes and reads) on dispatch threads, not
/// on the cooperative pool (STYLE.md 8), at most `count` jobs at once; further jobs wait their
/// turn without holding a thread, so the service's other requests keep being answered.
final class MediaWorkers: Sendable {
    private let slots: AsyncSemaphore
    private let queue: DispatchQueue

    /// - Parameters:
    ///   - label: the dispatch queue's label.
    ///   - count: jobs at once (≥ 1).
    init(label: String, count: Int) {
        slots = AsyncSemaphore(permits: count)
        queue = DispatchQueue(label: label, attributes: .concurrent)
    }

    /// Runs `body` on a worker thread once a slot is free.
    /// - Throws: what `body` throws.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        _ = await slots.acquire()
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: Result { try body() }) }
        }
        await slots.release()
        return try result.get()
    }
}

extension ServiceError {
    /// The Media library's error as a service error: its status and code (API.md "Media":
    /// 415 `unsupported_media`, 413 `payload_too_large`, 422 `image_too_large`, 500).
    init(_ error: MediaError) {
        self.init(code: error.httpStatus == 500 ? "internal_error" : error.code, message: error.detail, status: error.httpStatus)
    }
}
