import Messages
import Storage

/// An erased account's data in NotificationService, removed in phases of at most `limit` rows
/// per transaction (`AccountWorker` runs them; each statement is here). Every phase deletes what
/// is left of one kind, the first `limit` rows each time (or from a key cursor, `last_key`), so a
/// batch repeated after a crash finds only what it had not done. Nothing new can appear behind a
/// phase: the account is marked erased (`AccountStates.erase`) under its lock before the first
/// batch, and every write that involves an account (a notification, a follow, a request, a block,
/// a mute, a fan-out batch, a device) takes that lock shared and checks the state.
///
/// Phases, in order:
/// 0. `fanOuts`: the fan-outs of the user's posts stop (`fanout_jobs`).
/// 1. `byActor`: the user's notifications to others, with the corrections of a removal
///    (`BatchRemoval`: their recipients' groups, badges, unread counts, queued pushes), and those
///    held by a suspension.
/// 2. `toUser`: the notifications to the user (both tables and the held ones).
/// 3. `followers`, 4. `following`: the follow edges both ways, each other user's `follow_counts`
///    corrected in the same statement batch.
/// 5. `requests`, 6. `blocks`, 7. `mutes`: both ways.
/// 8. `pushes`: pushes queued to the user, the dedup keys of pushes to or by the user.
/// 9. `devices`: devices (their queued pushes went in phase 8), device sessions and moves, push
///    preferences.
/// 10. `groups`: the user's groups, unread tombstones and held group positions.
/// 11. `posts`: the user's post rows (their notifications went in phases 1 and 2) and purges.
/// 12. `account`: the user's counters, read marks, private flag, actor profile and identity
///     replica row (`identities`); the `account_states` tombstone stays, with the id.
///
/// The caller emits `notification.account.erased` in the transaction of the batch that reaches
/// `done`.
enum AccountErasure {
    /// The phases, in order (see the type); stored in `account_jobs.phase`, so never renumbered.
    enum Phase: Int64, CaseIterable, Sendable {
        case fanOuts = 0
        case byActor, toUser, followers, following, requests, blocks, mutes, pushes, devices, groups, posts, account
        case done
    }

    /// What one batch did.
    struct Progress: Equatable, Sendable {
        var phase: Phase
        var lastKey: Int64
        /// Rows deleted or corrected by the batch.
        var rows: Int
    }

    /// Runs `user`'s erasure from `phase` (at key `lastKey`) for up to `limit` rows, moving on to
    /// the next phase while rows are left in the budget, in `tx`.
    /// - Returns: where it stopped (`done`: nothing of the user is left). - Throws: `DatabaseError`.
    static func step(user: Int64, phase: Phase, lastKey: Int64, limit: Int, in tx: Transaction) throws -> Progress {
        var progress = Progress(phase: phase, lastKey: lastKey, rows: 0)
        while progress.phase != .done, progress.rows < limit {
            let budget = limit - progress.rows
            let (rows, last) = try run(progress.phase, user: user, after: progress.lastKey, limit: budget, in: tx)
            progress.rows += rows
            if let last {
                progress.lastKey = last
                break  // the budget ran out inside the phase
            }
            progress.phase = Phase(rawValue: progress.phase.rawValue + 1) ?? .done
            progress.lastKey = 0
        }
        return progress
    }

    /// One phase's work for at most `limit` rows.
    /// - Returns: the rows done and, when the phase is not finished, its key cursor (0 for the
    ///   phases that take the first rows left).
    private static func run(_ phase: Phase, user: Int64, after: Int64, limit: Int, in tx: Transaction) throws
        -> (rows: Int, last: Int64?)
    {
        let c = tx.connection
        /// `(done, nil)` when fewer than `limit` were found, else `(done, cursor)`.
        func result(_ done: Int, found: Int, cursor: Int64 = 0) -> (Int, Int64?) {
            found < limit ? (done, nil) : (done, cursor)
        }
        switch phase {
        case .fanOuts:
            try tx.query("DELETE FROM fanout_jobs WHERE owner = \(user)")
            return (c.changes, nil)
        case .byActor:
            let keys = try NotificationWriter.byKey(c) { try AccountHold.visibleKeys(by: user, limit: limit, on: c) }
            try BatchRemoval.remove(keys, holdFor: nil, in: tx)
            guard keys.count < limit else { return (keys.count, 0) }
            var done = keys.count
            done += try deleteFirst(
                "held_notifications", key: "recipient, seq", where: "actor = \(user)", limit: limit - done, in: tx)
            done += try deleteFirst(
                "held_groups", key: "actor, recipient, type, grp", where: "actor = \(user)", limit: limit - done, in: tx)
            return result(done, found: done)
        case .toUser:
            var done = 0
            for table: SQL in ["recent_notifications", "notifications", "held_notifications"] where done < limit {
                done += try deleteFirst(table, key: "recipient, seq", where: "recipient = \(user)", limit: limit - done, in: tx)
            }
            return result(done, found: done)
        case .followers, .following:
            // The other users' counters: each had one edge with the user.
            let (mine, other, counter): (SQL, SQL, SQL) =
                phase == .followers ? ("followee", "follower", "following") : ("follower", "followee", "followers")
            let edges = try c.integerPairs(
                "SELECT key, \(other) FROM edges WHERE \(mine) = \(user) AND key > \(after) ORDER BY key LIMIT \(limit)")
            guard let last = edges.last?.0 else { return (0, nil) }
            try tx.query("DELETE FROM edges WHERE \(mine) = \(user) AND key > \(after) AND key <= \(last)")
            let others = KeyTable.rows(edges.map(\.1).sorted().map { [$0] }, columns: 1)
            try tx.query(
                """
                UPDATE follow_counts SET \(counter) = \(SQL.greatest)(\(counter) - 1, 0)
                WHERE "user" IN (SELECT c0 FROM (\(others)) k)
                """)
            return result(edges.count, found: edges.count, cursor: last)
        case .requests:
            let sent = try deleteFirst("follow_requests", key: "key", where: "requester = \(user)", limit: limit, in: tx)
            let received = try deleteFirst("follow_requests", key: "key", where: "target = \(user)", limit: limit - sent, in: tx)
            return result(sent + received, found: sent + received)
        case .blocks:
            let made = try deleteFirst("blocks", key: "key", where: "blocker = \(user)", limit: limit, in: tx)
            let suffered = try deleteFirst("blocks", key: "key", where: "blocked = \(user)", limit: limit - made, in: tx)
            return result(made + suffered, found: made + suffered)
        case .mutes:
            let made = try deleteFirst("mutes", key: "key", where: "muter = \(user)", limit: limit, in: tx)
            let suffered = try deleteFirst("mutes", key: "key", where: "muted = \(user)", limit: limit - made, in: tx)
            return result(made + suffered, found: made + suffered)
        case .devices:
            var done = 0
            for row in try c.query("SELECT key FROM devices WHERE user_key = \(user) LIMIT \(limit)") {
                try DeviceStore.delete(deviceKey: try row.int64("key"), in: tx)
                done += 1
            }
            done += try deleteFirst(
                "device_sessions", key: "session_id", where: "user_key = \(user)", limit: limit - done, in: tx)
            done += try deleteFirst("device_moves", key: "user_key, at", where: "user_key = \(user)", limit: limit - done, in: tx)
            guard done < limit else { return (done, 0) }
            try tx.query("DELETE FROM push_preferences WHERE user_key = \(user)")
            return (done + c.changes, nil)
        case .pushes:
            var done = try deleteFirst("push_queue", key: "id", where: "recipient = \(user)", limit: limit, in: tx)
            for side: SQL in ["recipient", "actor"] where done < limit {
                done += try deleteFirst(
                    "push_suppressed", key: "recipient, actor, type, once", where: "\(side) = \(user)", limit: limit - done,
                    in: tx)
            }
            return result(done, found: done)
        case .groups:
            var done = 0
            for (table, key): (SQL, SQL) in [
                ("notification_groups", "recipient, type, grp"), ("removed_unread", "recipient, seq"),
                ("held_groups", "actor, recipient, type, grp"),
            ] where done < limit {
                done += try deleteFirst(table, key: key, where: "recipient = \(user)", limit: limit - done, in: tx)
            }
            return result(done, found: done)
        case .posts:
            let posts = try c.query("SELECT key FROM posts WHERE owner = \(user) ORDER BY key LIMIT \(limit)").map {
                try $0.int64("key")
            }
            guard !posts.isEmpty else { return (0, nil) }
            try tx.query("DELETE FROM purge_jobs WHERE post IN (\(list: posts))")
            try tx.query("DELETE FROM posts WHERE key IN (\(list: posts))")
            return result(posts.count, found: posts.count)
        case .account:
            var done = 0
            for statement: SQL in [
                "DELETE FROM recipients WHERE recipient = \(user)", "DELETE FROM follow_counts WHERE \"user\" = \(user)",
                "DELETE FROM private_accounts WHERE \"user\" = \(user)", "DELETE FROM actor_profiles WHERE actor = \(user)",
                "DELETE FROM identities WHERE key = \(user)",
            ] {
                try tx.query(statement)
                done += c.changes
            }
            return (done, nil)
        case .done:
            return (0, nil)
        }
    }

    /// Deletes the first `limit` rows of `table` matching `condition` (by `key`, the table's
    /// primary key columns), in `tx`. - Returns: how many. - Throws: `DatabaseError`.
    private static func deleteFirst(_ table: SQL, key: SQL, where condition: SQL, limit: Int, in tx: Transaction) throws
        -> Int
    {
        guard limit > 0 else { return 0 }
        try tx.query("DELETE FROM \(table) WHERE (\(key)) IN (SELECT \(key) FROM \(table) WHERE \(condition) LIMIT \(limit))")
        return tx.connection.changes
    }
}
