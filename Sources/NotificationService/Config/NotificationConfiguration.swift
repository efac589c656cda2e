import Support

/// NotificationService settings from the environment, each with a working default.
struct NotificationConfiguration: Sendable, Equatable {
    /// `NOTIFICATION_FANOUT_BATCH` (100...1,000,000, default 10,000): rows written or deleted per
    /// transaction by a fan-out or a post's purge. Larger batches finish a big fan-out sooner;
    /// smaller ones let other writes in more often (at 10,000 a batch holds the writer for
    /// tens of milliseconds, measured with `Benchmarks notification`).
    var fanOutBatch = 10_000
    /// `NOTIFICATION_ERASURE_BATCH` (1...100,000, default 500): most rows one transaction of
    /// `AccountWorker` deletes, moves aside or brings back (an erased account's data, a
    /// suspended account's notifications), so that no batch holds the write lock for long.
    var erasureBatch = 500
    /// `NOTIFICATION_TEST_ERASURE_HOLD_FILE` (tests only; default none): an erasure waits between
    /// batches while this file holds a number no greater than the batches it did (`TestHold`).
    var erasureHoldFile: String?
    /// `NOTIFICATION_RETENTION_DAYS` (1...36,500, default 90) and `NOTIFICATION_RETENTION_COUNT`
    /// (1...1,000,000, default 1,000): see `RetentionPolicy`.
    var retention = RetentionPolicy.default
    /// `NOTIFICATION_PRUNE_INTERVAL_SECONDS` (1...86,400, default 600): pause between two
    /// retention sweeps.
    var pruneIntervalSeconds = 600
    /// `NOTIFICATION_MERGE_INTERVAL_MS` (10...3,600,000, default 10,000) and
    /// `NOTIFICATION_MERGE_BATCH` (100...1,000,000, default 500): how often new notifications
    /// are moved into the big table, and how many rows per transaction (`RecentMerger`). Each
    /// merge transaction holds the writer: with 5,000 rows (about 100 ms on 7 M rows) likes at
    /// 3,000/s saw delivery p99 335-374 ms with a spike every merge; with 500, 199-244 ms.
    var mergeIntervalMs = 10_000
    var mergeBatch = 500
    /// `NOTIFICATION_DELIVERY_HWM` (1,000...10,000,000, default 200,000): messages queued per
    /// gateway on the delivery socket before libzmq drops (the gateway repairs by seq).
    var deliveryHighWaterMark = 200_000
    /// `NOTIFICATION_PUSH_BATCH` (1...10,000, default 500): pushes a sender claims and hands to
    /// APNs at once (`PushSender.batch`).
    var pushBatch = 500
    /// `NOTIFICATION_PUSH_LEASE_SECONDS` (5...3,600, default 60): how long a sender's claim holds
    /// its pushes; a killed sender's pushes are sent by another after it. Must exceed the time
    /// one batch's send can take.
    var pushLeaseSeconds = 60
    /// Whether `notification.import_follows` and `notification.import_devices` are served
    /// (`ALLOW_IMPORTS`, default false: see `Imports`).
    var allowImports = false

    /// The defaults.
    init() {}

    /// - Throws: `ConfigurationError` naming the variable.
    init(env: Environment) throws {
        fanOutBatch = try env.int("NOTIFICATION_FANOUT_BATCH", default: fanOutBatch, range: 100...1_000_000)
        erasureBatch = try env.int("NOTIFICATION_ERASURE_BATCH", default: erasureBatch, range: 1...100_000)
        erasureHoldFile = env.optionalString("NOTIFICATION_TEST_ERASURE_HOLD_FILE")
        retention = RetentionPolicy(
            maxAgeMs: Int64(try env.int("NOTIFICATION_RETENTION_DAYS", default: 90, range: 1...36_500)) * 86_400_000,
            count: try env.int("NOTIFICATION_RETENTION_COUNT", default: retention.count, range: 1...1_000_000))
        pruneIntervalSeconds = try env.int(
            "NOTIFICATION_PRUNE_INTERVAL_SECONDS", default: pruneIntervalSeconds, range: 1...86_400)
        mergeIntervalMs = try env.int(
            "NOTIFICATION_MERGE_INTERVAL_MS", default: mergeIntervalMs, range: 10...3_600_000)
        mergeBatch = try env.int("NOTIFICATION_MERGE_BATCH", default: mergeBatch, range: 100...1_000_000)
        deliveryHighWaterMark = try env.int(
            "NOTIFICATION_DELIVERY_HWM", default: deliveryHighWaterMark, range: 1_000...10_000_000)
        pushBatch = try env.int("NOTIFICATION_PUSH_BATCH", default: pushBatch, range: 1...10_000)
        pushLeaseSeconds = try env.int("NOTIFICATION_PUSH_LEASE_SECONDS", default: pushLeaseSeconds, range: 5...3_600)
        allowImports = try env.bool("ALLOW_IMPORTS", default: false)
    }
}
