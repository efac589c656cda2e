import APNs
import ServiceKit
import Storage
import Support
import Wire

/// Drains the push queue (`push_queue`, `PushQueueStore`) to APNs through a `PushTransport`.
///
/// It runs in every replica (`NotificationApp.replicaServices`), not only the active one: the
/// claim makes that safe and N senders drain a celebrity's burst N times as fast. Each step:
///
/// 1. **Claim** (one transaction): up to `batch` due rows, in (round, id) order (each
///    recipient's first waiting push before anyone's second: `PushQueueStore.claim`), are
///    leased to this sender until now + `leaseMs`
///    (`claimed_until`, `claimed_by`). PostgreSQL: the rows are locked `FOR UPDATE SKIP LOCKED`
///    and their lease checked again under the lock; SQLite: one `UPDATE … RETURNING` on the one
///    writer. Two senders never hold the same row. The badge (the recipient's unread count) is
///    read in this transaction, so it is the count when the push is sent.
/// 2. **Send** the batch (`PushTransport.send`, HTTP/2 streams in parallel), outside any
///    transaction.
/// 3. **Apply** the outcomes (one transaction): sent → the row is deleted; `removeDevice` → the
///    device and its rows are deleted unless it was registered again after APNs' `timestamp`
///    (then the row is tried again); retry → due again after `Retry-After` or the back-off
///    (1 s doubling per attempt, at most 15 min), one attempt more; dropped (or a day old) →
///    deleted and logged. A failing apply is tried again (100 ms doubling to 5 s) as long as the
///    lease runs, cancellation or not.
///
/// Fairness: a push's `round` is its place in its recipient's own queue, so a 100,000-row
/// burst for one user shares every batch with the next user's like (round 0) instead of
/// queueing it behind. (A window over the due rows, `row_number() OVER (PARTITION BY
/// recipient)` ≤ K, gave the same order but read the whole queue per claim: 140 ms a claim
/// with 100,000 rows queued on SQLite, 14 s to drain 50,000 in batches of 500.)
///
/// **Exactly once.** A row is queued in the transaction that writes its notification (never
/// one without the other), and leaves the queue only in the transaction that records its
/// outcome. Between the two, a lease means one sender at a time holds it: a sender killed
/// after its claim leaves the row claimed until the lease ends (`leaseMs`, longer than any
/// send takes), and then any sender claims it again and sends it: nothing is lost. The one
/// window for a duplicate is a crash (or a database outage outlasting the lease) after APNs
/// answered 200 and before the outcome's commit: the push is then sent again after the lease.
/// No protocol closes that window (APNs takes no idempotency key, and its 200 cannot commit
/// with our transaction); it is kept to the two batches in flight, and made invisible: every push
/// carries an `apns-collapse-id` (its group's, or the notification's own id), so the second
/// copy replaces the first on the device instead of showing twice. Restarts, replicas and
/// retries add no other path to a second send: a row is sent only by the holder of its lease.
final class PushSender: Service {
    let database: Database
    let transport: any PushTransport
    let queue: PushQueue
    let logger: Logger
    /// Rows claimed per step (one `send` call).
    let batch: Int
    /// How long a claim holds its rows (ms): longer than a send can take.
    let leaseMs: Int64
    /// How often an idle sender looks for rows the doorbell did not announce (another replica's,
    /// retries coming due, expired leases), in ms.
    let pollMs: Int
    /// This sender's claim name (`push_queue.claimed_by`), unique per process.
    let claimer = RandomID.unique()
    private let counters = Locked<[String: Int64]>([:])

    init(
        database: Database, transport: any PushTransport, queue: PushQueue, logger: Logger, batch: Int = 500,
        leaseMs: Int64 = 60_000, pollMs: Int = 1_000
    ) {
        self.database = database
        self.transport = transport
        self.queue = queue
        self.logger = logger
        self.batch = batch
        self.leaseMs = leaseMs
        self.pollMs = pollMs
    }

    /// `push.sent`, `push.retried`, `push.devices_removed`, `push.dropped` since start.
    func counts() -> [String: Int64] { counters.withLock { $0 } }

    /// Sends until cancelled: batch after batch while there are due rows, then waits for the
    /// doorbell (a commit queued pushes) or `pollMs`.
    ///
    /// Two batches are in flight at once: the next batch is claimed, and handed to the
    /// transport, while the previous one is still being sent, so the connections never drain
    /// between batches and the claim's database work overlaps the sending. Each batch has its
    /// own lease and is applied on its own, so this changes nothing of the exactly-once argument.
    func run() async {
        var retryMs = 0
        while !Task.isCancelled {
            var previous: Task<Void, Never>?
            do {
                while !Task.isCancelled {
                    guard let (claimed, lease) = try await claim() else { break }
                    let sending = Task { await self.send(claimed, leaseUntil: lease) }
                    await previous?.value
                    previous = sending
                }
                retryMs = 0
            } catch {
                logger.error("push.claim_failed", metadata: ["error": "\(error)"])
                retryMs = min(max(retryMs * 2, 100), 5_000)
            }
            await previous?.value
            await queue.doorbell.wait(timeoutMs: retryMs > 0 ? retryMs : pollMs)
        }
    }

    /// One claim, send and apply. - Returns: how many rows it claimed (0: none due).
    /// - Throws: the engine's error from the claim (nothing claimed then).
    @discardableResult
    func step() async throws -> Int {
        guard let (claimed, lease) = try await claim() else { return 0 }
        await send(claimed, leaseUntil: lease)
        return claimed.count
    }

    /// Claims up to `batch` due rows under a new lease. - Returns: the rows and the lease's end,
    /// or nil when none are due. - Throws: the engine's error (nothing claimed then).
    private func claim() async throws -> ([ClaimedPush], lease: Int64)? {
        let now = queue.clock()
        let (lease, claimer, limit) = (now + leaseMs, self.claimer, batch)
        let claimed = try await database.write { tx in
            try PushQueueStore.claim(now: now, leaseUntil: lease, claimer: claimer, limit: limit, in: tx)
        }
        return claimed.isEmpty ? nil : (claimed, lease)
    }

    /// Sends claimed rows and records their outcomes.
    private func send(_ claimed: [ClaimedPush], leaseUntil: Int64) async {
        let outcomes = await transport.send(claimed.map(PushPayload.message))
        await apply(Array(zip(claimed, outcomes)), leaseUntil: leaseUntil)
    }

    /// Back-off before attempt `attempts + 1` (ms): 1 s doubling, at most 15 min.
    static func backoffMs(attempts: Int64) -> Int64 {
        min(1_000 << min(attempts, 20), 900_000)
    }

    /// Records the outcomes in one transaction, trying again while the lease runs.
    private func apply(_ results: [(ClaimedPush, PushOutcome)], leaseUntil: Int64) async {
        let now = queue.clock()
        let claimer = self.claimer
        let logger = self.logger
        var delayMs = 100
        while true {
            do {
                let tally = try await database.write { tx -> [String: Int64] in
                    var tally: [String: Int64] = [:]
                    var done: [Int64] = []
                    for (push, outcome) in results {
                        switch outcome {
                        case .sent:
                            done.append(push.id)
                            tally["push.sent", default: 0] += 1
                        case .dropped(let reason):
                            done.append(push.id)
                            tally["push.dropped", default: 0] += 1
                            logger.warning(
                                "push.dropped", metadata: ["push": "\(push.id)", "reason": reason, "seq": "\(push.seq)"])
                        case .removeDevice(let reason, let unregisteredAt):
                            if try PushQueueStore.removeDevice(push.device, unregisteredAt: unregisteredAt, in: tx) {
                                tally["push.devices_removed", default: 0] += 1
                                logger.info("push.device_removed", metadata: ["device": "\(push.device)", "reason": reason])
                            } else {
                                try Self.retry(push, after: nil, now: now, claimer: claimer, logger: logger, in: tx)
                                tally["push.retried", default: 0] += 1
                            }
                        case .retry(_, let after):
                            try Self.retry(push, after: after, now: now, claimer: claimer, logger: logger, in: tx)
                            tally["push.retried", default: 0] += 1
                        }
                    }
                    try PushQueueStore.remove(done, in: tx)
                    return tally
                }
                counters.withLock { c in for (k, v) in tally { c[k, default: 0] += v } }
                return
            } catch {
                guard queue.clock() + Int64(delayMs) < leaseUntil else {
                    logger.error("push.apply_failed", metadata: ["error": "\(error)", "rows": "\(results.count)"])
                    return  // the lease ends: another claim sends them again
                }
                logger.warning("push.apply_retry", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(delayMs))
                delayMs = min(delayMs * 2, 5_000)
            }
        }
    }

    /// Makes `push` due again after `after` seconds (APNs' `Retry-After`) or the back-off; a
    /// push older than its expiration is dropped instead.
    private static func retry(
        _ push: ClaimedPush, after: Double?, now: Int64, claimer: String, logger: Logger, in tx: Transaction
    ) throws {
        let delay = after.map { Int64(($0 * 1_000).rounded(.up)) } ?? backoffMs(attempts: push.attempts)
        guard now + delay < push.createdAt + PushPayload.lifetimeMs else {
            try PushQueueStore.remove([push.id], in: tx)
            logger.warning("push.expired", metadata: ["push": "\(push.id)", "attempts": "\(push.attempts + 1)"])
            return
        }
        try PushQueueStore.reschedule(push.id, claimer: claimer, availableAt: now + delay, in: tx)
    }
}
