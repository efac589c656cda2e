import Dispatch
import Messages
import ServiceKit
import Storage
import Support
import Wire

/// Carries out what an account's new state asks of NotificationService, in batches of at most
/// `batch` rows, each one short write transaction, so that others' requests, events and fan-outs
/// go on between them whatever the account's size (a user with 1,000,000 followers):
///
/// - suspended: its notifications to others are moved aside (`AccountHold.hide`, kept);
/// - deleting: they are removed (`AccountHold.hide`, not kept: a deletion is never undone);
/// - active again: the held ones come back (`AccountHold.restore`);
/// - erased (`profile.account.erased`): everything of the account goes (`AccountErasure`), and
///   the batch that finishes emits `notification.account.erased`, step 3 of the deletion saga.
///
/// The queue is `account_jobs` (`AccountJobs`): a job per account, taken in turns (the fewest
/// batches first), its place stored in the transaction of each batch, so a kill at any point
/// repeats at most the batch it interrupted, which finds only what is left. Each batch takes the
/// account's lock shared and reads the state then, so it never acts on a state that a concurrent
/// change replaced (`AccountStates.apply` takes it exclusively). Runs in the active replica only
/// (`NotificationApp.backgroundServices`).
///
/// Counters (`counts()`, in `ops.ping`): `accounts.batches`, `accounts.rows`,
/// `accounts.<kind>.done` (jobs finished: `hide`, `remove`, `restore`, `erase`),
/// `accounts.longest_batch_us` (the longest batch's statements, µs: how long a batch held the
/// write lock before its commit), `accounts.longest_write_us` (the longest batch from its
/// queueing to its commit, µs). A finished job logs `accounts.done`; a finished erasure logs
/// `erasure.finished` instead (`batches`, `rows`, `longest_batch_ms`, `total_ms`, as
/// ProfileService's `AccountEraser` does).
final class AccountWorker: Service {
    let database: Database
    /// Rows per transaction (`NOTIFICATION_ERASURE_BATCH`, default 500).
    let batch: Int
    let logger: Logger
    /// Where a test holds an erasure between batches (`NOTIFICATION_TEST_ERASURE_HOLD_FILE`).
    let hold: TestHold
    private let doorbell = Doorbell()
    private let counters = Locked<[String: Int64]>([:])
    /// Batches of each job in this process since it started.
    private let progress = Locked<[Int64: Progress]>([:])

    /// A job's batches in this process.
    struct Progress: Sendable, Equatable {
        var batches = 0
        var rows: Int64 = 0
        /// The longest batch's statements, µs.
        var longestUs: Int64 = 0
    }

    /// What one batch did, for the counters and the log.
    struct Outcome: Sendable, Equatable {
        enum Kind: String, Sendable {
            case hide, remove, restore, erase
        }
        var user: Int64
        var userId: String
        var kind: Kind
        var rows: Int
        /// Whether the job is finished (and removed).
        var done: Bool
        /// Unix ms: when the job started.
        var startedAt: Int64
        /// µs: the batch's statements.
        var bodyUs: Int64
        /// The job's batches in this process so far, this one included (0 until counted).
        var batches = 0
        /// An erasure's phase when the batch began (`AccountErasure.Phase`; nil for other kinds).
        var phase: AccountErasure.Phase?
    }

    /// - Parameters:
    ///   - batch: most rows per transaction (at least 1).
    ///   - hold: where a test holds an erasure between batches (none by default).
    init(database: Database, batch: Int, logger: Logger, hold: TestHold = TestHold(path: nil)) {
        self.database = database
        self.batch = batch
        self.logger = logger
        self.hold = hold
    }

    /// `accounts.*` counters since start.
    func counts() -> [String: Int64] { counters.withLock { $0 } }

    /// Wakes the worker once `tx` commits (a state change queued a job).
    func wakeOnCommit(_ tx: Transaction) {
        let doorbell = self.doorbell
        tx.onCommit { doorbell.ring() }
    }

    /// Runs batches until no job is left, then waits for the doorbell (or a 5 s tick); until
    /// cancelled.
    func run() async {
        var retryMs = 0  // after a failure: 100 ms, doubling to 5 s
        while !Task.isCancelled {
            do {
                while !Task.isCancelled, let outcome = try await step() {
                    if outcome.kind == .erase, !outcome.done {
                        await hold.wait(done: outcome.batches, logger: logger, job: "notification.erasure")
                    }
                    // As long as the batch took: a job holds the writer at most half of the
                    // time, other users' writes get the rest (docs/account-lifecycle.md).
                    try? await Task.sleep(for: .microseconds(min(outcome.bodyUs, 1_000_000)))
                }
                retryMs = 0
            } catch {
                logger.error("accounts.failed", metadata: ["error": "\(error)"])
                retryMs = min(max(retryMs * 2, 100), 5_000)
            }
            await doorbell.wait(timeoutMs: retryMs > 0 ? retryMs : 5_000)
        }
    }

    /// Runs one batch of the next job, in one write transaction.
    /// - Returns: what it did, nil when no job is waiting. - Throws: `DatabaseError`.
    @discardableResult
    func step() async throws -> Outcome? {
        let batch = self.batch
        let queued = DispatchTime.now().uptimeNanoseconds
        let outcome = try await database.write { tx -> Outcome? in
            let started = DispatchTime.now().uptimeNanoseconds
            guard let job = try AccountJobs.next(in: tx) else { return nil }
            var outcome = try Self.run(job, limit: batch, in: tx)
            outcome.bodyUs = Int64((DispatchTime.now().uptimeNanoseconds - started) / 1_000)
            return outcome
        }
        guard var outcome else { return nil }
        outcome.batches = record(outcome, writeUs: Int64((DispatchTime.now().uptimeNanoseconds - queued) / 1_000))
        return outcome
    }

    /// One batch of `job` by its account's state, in `tx`.
    static func run(_ job: AccountJob, limit: Int, in tx: Transaction) throws -> Outcome {
        try Relations.lockAccounts([job.user], shared: true, in: tx)
        let state = try AccountStates.state(job.user, on: tx.connection)
        var outcome = Outcome(
            user: job.user, userId: job.userId, kind: .hide, rows: 0, done: false, startedAt: job.startedAt, bodyUs: 0)
        switch state {
        case .suspended, .deleting:
            outcome.kind = state == .suspended ? .hide : .remove
            outcome.rows = try AccountHold.hide(job.user, keep: state == .suspended, limit: limit, in: tx)
            outcome.done = outcome.rows < limit
        case .active:
            outcome.kind = .restore
            outcome.rows = try AccountHold.restore(job.user, limit: limit, in: tx)
            outcome.done = outcome.rows < limit
        case .erased:
            outcome.kind = .erase
            let phase = AccountErasure.Phase(rawValue: job.phase) ?? .fanOuts
            let progress = try NotificationWriter.byKey(tx.connection) {
                try AccountErasure.step(
                    user: job.user, userId: job.userId, phase: phase, lastKey: job.lastKey, limit: limit, in: tx)
            }
            outcome.phase = phase
            outcome.rows = progress.rows
            outcome.done = progress.phase == .done
            if outcome.done {
                try tx.emit(Notifications.AccountErased(userId: job.userId))
            } else {
                try AccountJobs.advance(job.user, phase: progress.phase.rawValue, lastKey: progress.lastKey, in: tx)
            }
        }
        if outcome.done {
            try AccountJobs.remove(job.user, in: tx)
        } else if state != .erased {
            try AccountJobs.advance(job.user, phase: 0, lastKey: 0, in: tx)
        }
        return outcome
    }

    /// Counts a batch and logs a finished job (`accounts.done`, or `erasure.finished` for an
    /// erasure: its batches, rows and longest batch as this process saw them, and the time since
    /// the job started).
    /// - Returns: the job's batches in this process, this one included.
    private func record(_ outcome: Outcome, writeUs: Int64) -> Int {
        let seen = progress.withLock { p -> Progress in
            var entry = p[outcome.user] ?? Progress()
            entry.batches += 1
            entry.rows += Int64(outcome.rows)
            entry.longestUs = max(entry.longestUs, outcome.bodyUs)
            if outcome.done { p.removeValue(forKey: outcome.user) } else { p[outcome.user] = entry }
            return entry
        }
        counters.withLock { c in
            c["accounts.batches", default: 0] += 1
            c["accounts.rows", default: 0] += Int64(outcome.rows)
            c["accounts.longest_batch_us"] = max(c["accounts.longest_batch_us"] ?? 0, outcome.bodyUs)
            c["accounts.longest_write_us"] = max(c["accounts.longest_write_us"] ?? 0, writeUs)
            if outcome.done { c["accounts.\(outcome.kind.rawValue).done", default: 0] += 1 }
        }
        logger.debug(
            "accounts.batch",
            metadata: [
                "user.id": outcome.userId, "kind": outcome.kind.rawValue, "phase": "\(outcome.phase.map { "\($0)" } ?? "-")",
                "rows": "\(outcome.rows)", "batch_us": "\(outcome.bodyUs)", "write_us": "\(writeUs)",
            ])
        guard outcome.done else { return seen.batches }
        let totalMs = Timestamp.nowMs() - outcome.startedAt
        if outcome.kind == .erase {
            logger.info(
                "erasure.finished",
                metadata: [
                    "user.id": outcome.userId, "batches": "\(seen.batches)", "rows": "\(seen.rows)",
                    "longest_batch_ms": "\(seen.longestUs / 1_000).\(seen.longestUs % 1_000 / 100)",
                    "total_ms": "\(totalMs)",
                ])
        } else {
            logger.info(
                "accounts.done",
                metadata: [
                    "user.id": outcome.userId, "kind": outcome.kind.rawValue, "batches": "\(seen.batches)",
                    "rows": "\(seen.rows)", "longest_batch_us": "\(seen.longestUs)", "ms": "\(totalMs)",
                ])
        }
        return seen.batches
    }
}
