import Shared

/// Deletes sessions that can no longer be used (expired, or revoked by a logout), so the
/// `sessions` table holds live sessions only. A deleted session's token is simply unknown:
/// rejected with 401 `invalid_token`, as it was before.
struct SessionPurge: Sendable {
    let database: Database
    let logger: Logger
    /// Rows deleted per transaction, so other writes are not held up behind a large purge.
    var batch = 5_000

    /// Deletes every session expired or revoked at `nowMs` (Unix ms). - Returns: how many.
    /// - Throws: `SQLiteError`.
    func purge(nowMs: Int64 = Timestamp.nowMs()) async throws -> Int {
        var total = 0
        while true {
            let batch = self.batch
            // Two statements, each served by its own index (an OR of the two made SQLite scan).
            let deleted = try await database.write { tx -> Int in
                try tx.query(
                    "DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE expires_at <= ? LIMIT ?)",
                    [nowMs, batch])
                let expired = tx.connection.changes
                try tx.query(
                    """
                    DELETE FROM sessions WHERE rowid IN (
                        SELECT rowid FROM sessions WHERE revoked_at IS NOT NULL LIMIT ?)
                    """, [batch - expired])
                return expired + tx.connection.changes
            }
            total += deleted
            if deleted < batch { return total }
        }
    }

    /// Purges now and then every `intervalSeconds` until the task is cancelled.
    func run(intervalSeconds: Int) async {
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
