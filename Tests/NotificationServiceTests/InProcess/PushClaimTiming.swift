import APNs
import Foundation
import Harness
import TestSupport
import Testing
import Wire

@testable import NotificationService

/// An opt-in measurement, not a check (`PUSH_TIMING=1 swift test --filter PushClaimTiming`):
/// 100,000 queued pushes (one per recipient, as a fan-out leaves them), then claims of 500 and of
/// 2,000 with the badge read and the rows deleted, as `PushSender` does without a transport, until
/// half are gone; prints the time per batch size (docs/push.md).
struct PushClaimTiming {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PUSH_TIMING"] != nil)) func claimTiming() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let n = 100_000
        try await s.database.write { tx in
            let now = Timestamp.nowMs()
            try tx.connection.execute(
                .dialect(
                    sqlite: """
                        WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < \(n))
                        INSERT INTO devices(id, user_key, token, environment, session_id, created_at)
                        SELECT 'd' || i, i, printf('%064x', i), 'sandbox', 's', \(now) FROM k
                        """,
                    postgres: """
                        INSERT INTO devices(id, user_key, token, environment, session_id, created_at)
                        SELECT 'd' || i, i, lpad(to_hex(i), 64, '0'), 'sandbox', 's', \(now) FROM generate_series(1, \(n)) i
                        """))
            try tx.connection.execute(
                """
                INSERT INTO push_queue(device, recipient, seq, type, text, collapse_id, available_at, created_at, round)
                SELECT key, user_key, 1, 5, 'star shared a new post.', NULL, \(literal: now), \(literal: now), 0 FROM devices
                """)
        }
        for batch in [500, 2_000] {
            let start = Date()
            var claims = 0
            var total = 0
            while true {
                let now = Timestamp.nowMs()
                let got = try await s.database.write { tx in
                    let rows = try PushQueueStore.claim(
                        now: now, leaseUntil: now + 60_000, claimer: "x", limit: batch, in: tx)
                    try PushQueueStore.remove(rows.map(\.id), in: tx)
                    return rows.count
                }
                if got == 0 { break }
                claims += 1
                total += got
                if total >= n / 2 { break }
            }
            let seconds = Date().timeIntervalSince(start)
            print("TIMING \(TestStorage.engine) batch \(batch): \(total) rows in \(claims) claims, \(seconds) s")
        }
    }
}
