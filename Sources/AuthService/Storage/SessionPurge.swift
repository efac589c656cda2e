import ServiceKit
import Support

/// Deletes sessions that can no longer be used (expired, or revoked by a logout), so the
/// `sessions` table holds live sessions only: at start and then every `intervalSeconds`, in
/// transactions of at most `batch` rows so other writes are not held up behind a large purge.
/// A deleted session's token is simply unknown: rejected with 401 `invalid_token`, as before.
struct SessionPurge: Service {
    let store: any SessionStore
    let intervalSeconds: Int
    let logger: Logger
    let clock: Clock
    /// Rows deleted per transaction.
    var batch = 5_000

    /// Deletes every session expired or revoked now. - Returns: how many. - Throws: the engine's error.
    func purge() async throws -> Int {
        let now = clock.now()
        var total = 0
        while true {
            let deleted = try await store.purge(now: now, limit: batch)
            total += deleted
            if deleted < batch { return total }
        }
    }

    /// Purges now and then every `intervalSeconds` until cancelled.
    func run() async {
        while !Task.isCancelled {
            do {
                let n = try await purge()
                if n > 0 { logger.info("sessions.purged", metadata: ["count": "\(n)"]) }
            } catch {
                logger.error("sessions.purge_failed", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(intervalSeconds))
        }
    }
}
