import Dispatch
import Media
import Shared

/// Runs blocking media work (decoding, encoding, file writes and reads) on dispatch threads, not
/// on the cooperative pool (STYLE.md 8), at most `count` jobs at once; further jobs wait their
/// turn without holding a thread, so the service's other requests keep being answered. At most
/// `queueLimit` jobs wait (then 503), and a job whose request deadline passed while it waited is
/// not started (504): under overload no CPU goes to uploads nobody waits for.
final class MediaWorkers: Sendable {
    private let slots: AsyncSemaphore
    private let queue: DispatchQueue
    private let queueLimit: Int

    /// - Parameters:
    ///   - label: the dispatch queue's label.
    ///   - count: jobs at once (≥ 1).
    ///   - queueLimit: jobs that may wait for a slot.
    init(label: String, count: Int, queueLimit: Int) {
        slots = AsyncSemaphore(permits: count)
        queue = DispatchQueue(label: label, attributes: .concurrent)
        self.queueLimit = queueLimit
    }

    /// Runs `body` on a worker thread once a slot is free.
    /// - Throws: 503 `busy` (with `Retry-After`) when `queueLimit` jobs already wait, 504
    ///   `deadline_exceeded` when the request's deadline (`RequestDeadline`) passed while waiting,
    ///   else what `body` throws.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        guard await slots.acquire(maxWaiting: queueLimit) else {
            throw ServiceError(.busy, message: "too many uploads are being processed", status: 503, retryAfter: 1)
        }
        if let deadline = RequestDeadline.current, Timestamp.nowMs() >= deadline {
            await slots.release()
            throw ServiceError(.deadlineExceeded, message: "the deadline passed while waiting", status: 504)
        }
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
