import Foundation
import Storage
import Testing
import Wire

@testable import NotificationService

/// The two notification tables (`RecentMerger`) and retention (`RetentionPruner`), on a temporary
/// database with the writer and stores the service uses: a merge changes nothing any read
/// shows, dedup and seqs hold across both tables, and pruning keeps the newest within the
/// policy without ever moving a head back.
struct RecentAndRetentionTests {
    let database: Database
    let store: SQLNotificationStore
    let writer = NotificationWriter(delivery: .none)

    init() throws {
        database = try TestDatabase.make()
        store = SQLNotificationStore(database: database)
    }

    /// A like of `post` by `actor` for `recipient` at `time` (Unix ms). - Returns: its seq (nil: none stored).
    @discardableResult
    func like(_ actor: String, _ recipient: String, post: String, time: Int64 = Timestamp.nowMs()) async throws -> Int64? {
        let writer = self.writer
        return try await database.write { tx in
            try writer.insert(
                NewNotification(
                    recipientId: recipient, actorId: actor, type: .like, detail: "photo",
                    post: .init(id: post, thumbnailURL: "https://img.example/\(post).jpg"), createdAt: time),
                in: tx)?.seq
        }
    }

    func counts() async throws -> (recent: Int64, merged: Int64) {
        try await database.read { c in
            (
                try c.scalar("SELECT COUNT(*) FROM recent_notifications") ?? -1,
                try c.scalar("SELECT COUNT(*) FROM notifications") ?? -1
            )
        }
    }

    /// What every read shows for `recipients`.
    func reads(_ recipients: [String]) async throws -> [String] {
        var out: [String] = []
        for r in recipients {
            let list = try await store.list(recipientId: r, page: .init(limit: 100))
            let since = try await store.since(recipientId: r, afterSeq: 0, limit: 1_000)
            let start = try await store.streamStart(recipientId: r)
            out.append(
                "\(r) list \(list.items.map { "\($0.id)/\($0.seq)/\($0.post?.id ?? "")" }) unread \(list.unreadCount) "
                    + "since \(since.items.map(\.seq)) head \(since.headSeq) start \(start.headSeq)")
        }
        return out
    }

    @Test func aMergeChangesNoReadAndSeqsAndDedupHoldAcrossBothTables() async throws {
        for i in 0..<10 { try await like("u-\(i)", "u-owner", post: "p\(i % 3)") }
        for i in 0..<4 { try await like("u-\(i)", "u-other", post: "q") }
        _ = try await store.markRead(recipientId: "u-owner", upToSeq: 3)
        let before = try await reads(["u-owner", "u-other"])
        #expect(try await counts() == (14, 0))

        // Batches of 3: recipients' rows split between the tables part way.
        let merger = RecentMerger(database: database, intervalMs: 1_000, batch: 3, logger: InProcessService.logger)
        let (moved, reached) = try await merger.step(after: (Int64.min, Int64.min), upTo: (Int64.max, Int64.max))
        #expect(moved == 3 && reached != nil)
        #expect(try await counts() == (11, 3))
        #expect(try await reads(["u-owner", "u-other"]) == before)
        #expect(try await merger.pass() == 11)
        #expect(try await counts() == (0, 14))
        #expect(try await reads(["u-owner", "u-other"]) == before)

        // The same like again is still absorbed (its key is in the merged table now); new ones
        // go on from the head.
        #expect(try await like("u-0", "u-owner", post: "p0") == nil)
        #expect(try await like("u-new", "u-owner", post: "p0") == 11)
        #expect(try await like("u-new", "u-owner", post: "p0") == nil)  // and in the recent one
        #expect(try await store.list(recipientId: "u-owner", page: .init(limit: 100)).unreadCount == 8)
        #expect(try await merger.pass() == 1)
        #expect(try await store.since(recipientId: "u-owner", afterSeq: 9, limit: 10).items.map(\.seq) == [10, 11])
    }

    @Test func theMergerWaitsWhileAFanOutOrPurgeJobIsPending() async throws {
        for i in 0..<5 { try await like("u-\(i)", "u-owner", post: "p") }
        let merger = RecentMerger(database: database, intervalMs: 1_000, batch: 2, logger: InProcessService.logger)
        try await database.write { tx in _ = try tx.query("INSERT INTO purge_jobs(post) VALUES (12345)") }
        #expect(try await merger.pass() == 0)
        #expect(try await counts() == (5, 0))
        try await database.write { tx in _ = try tx.query("DELETE FROM purge_jobs") }
        #expect(try await merger.pass() == 5)
        #expect(try await counts() == (0, 5))
    }

    @Test func deletingAPostReachesBothTables() async throws {
        for i in 0..<6 { try await like("u-\(i)", "u-owner", post: i % 2 == 0 ? "gone" : "kept") }
        let merger = RecentMerger(database: database, intervalMs: 1_000, batch: 4, logger: InProcessService.logger)
        _ = try await merger.step(after: (Int64.min, Int64.min), upTo: (Int64.max, Int64.max))
        #expect(try await counts() == (2, 4))
        let deleted = try await database.write { tx in
            try NotificationWriter.delete(aboutPost: try Keys.existingPost("gone", on: tx.connection)!, limit: 100, in: tx)
        }
        #expect(deleted == 3)
        #expect(try await store.since(recipientId: "u-owner", afterSeq: 0, limit: 10).items.map(\.seq) == [2, 4, 6])
        #expect(try await like("u-9", "u-owner", post: "kept") == 7)
    }

    @Test func retentionKeepsTheNewestCountAndNeverTheHead() async throws {
        let old = Timestamp.nowMs() - 100 * 86_400_000  // past 90 days
        for i in 0..<8 { try await like("u-\(i)", "u-many", post: "p", time: old) }
        for i in 0..<3 { try await like("u-\(i)", "u-few", post: "p", time: old) }
        for i in 0..<2 { try await like("u-\(i)", "u-fresh", post: "p") }
        _ = try await RecentMerger(database: database, intervalMs: 1_000, batch: 5, logger: InProcessService.logger).pass()
        try await like("u-late", "u-many", post: "p")  // seq 9, recent, new
        let pruner = RetentionPruner(
            database: database, policy: RetentionPolicy(maxAgeMs: 90 * 86_400_000, count: 5), intervalMs: 1_000,
            recipientsPerTransaction: 1, logger: InProcessService.logger)
        let deleted = try await pruner.sweep()
        // u-many: 9 rows; the count rule keeps 5-9; the age rule then takes 5-8 (old), keeping
        // 9. u-few: all old; the newest is kept for the head. u-fresh: nothing to do.
        #expect(try await store.since(recipientId: "u-many", afterSeq: 0, limit: 100).items.map(\.seq) == [9])
        #expect(try await store.since(recipientId: "u-few", afterSeq: 0, limit: 100).items.map(\.seq) == [3])
        #expect(try await store.since(recipientId: "u-fresh", afterSeq: 0, limit: 100).items.map(\.seq) == [1, 2])
        #expect(deleted == 8 + 2)
        for (user, head) in [("u-many", 9), ("u-few", 3), ("u-fresh", 2)] {
            #expect(try await store.since(recipientId: user, afterSeq: 0, limit: 1).headSeq == Int64(head), "\(user)")
        }
        // A new one: the old one it kept for the head can go now.
        #expect(try await like("u-x", "u-few", post: "p") == 4)
        #expect(try await pruner.sweep() == 1)
        #expect(try await store.since(recipientId: "u-few", afterSeq: 0, limit: 100).items.map(\.seq) == [4])
        #expect(try await pruner.sweep() == 0)
    }
}
