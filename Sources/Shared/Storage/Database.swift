import Dispatch
import Foundation
import Messages
import Support
import Synchronization
import Wire

/// A write lost a race with a concurrent transaction (e.g. another replica took the same
/// per-recipient seq) and changed nothing that should be kept: `Database.write` runs it again, up
/// to `Database.maxConflictRetries` times (its statements then see what the other committed),
/// before failing with it.
/// PostgreSQL's deadlock and serialization failures are run again the same way.
public struct WriteConflict: Error, CustomStringConvertible {
    public var reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { "write conflict: \(reason)" }
}

/// A write whose request deadline (`RequestDeadline`) passed while it waited for the writer:
/// nothing of it ran (its caller has given up). The service host answers 504.
public struct WriteDeadlinePassed: Error, CustomStringConvertible {
    public var description: String { "deadline passed while waiting for the database" }
}

/// A subscriber's cursor was not where the applying replica expected: another replica applied
/// those events (see `Transaction.setCursor`).
public struct CursorMoved: Error, CustomStringConvertible {
    public var producer: String
    public var expected: Int64
    public var description: String {
        "the cursor for \(producer) moved past \(expected): another replica applies its events"
    }
}

/// An event a write emitted, not yet in the outbox.
struct PendingEvent {
    var type: String
    var time: String
    var body: String
}

/// An event written to the outbox in a committed transaction, ready to publish.
public struct OutboxEvent: Sendable {
    public var seq: Int64
    public var type: String
    /// The whole event envelope as JSON bytes.
    public var envelope: [UInt8]
}

/// A write transaction: the connection plus the outbox, so a state change and the events that
/// announce it commit together (the transactional outbox pattern).
public final class Transaction {
    public let connection: DatabaseConnection
    let producer: String?
    /// Events emitted by this write, appended to the outbox just before the commit.
    var pending: [PendingEvent] = []
    var committed: [@Sendable () -> Void] = []

    init(connection: DatabaseConnection, producer: String?) {
        self.connection = connection
        self.producer = producer
    }

    /// Runs a statement on the transaction's connection (shorthand for `connection.query`).
    /// - Throws: `DatabaseError`.
    @discardableResult
    public func query(_ sql: SQL) throws -> [Row] {
        try connection.query(sql)
    }

    /// Emits an event: it is appended to the outbox in this transaction, just before the
    /// commit (its sequence number is taken then: see `Outbox`), and published after it.
    /// - Throws: an encoding error for the body.
    public func emit<E: Event>(_ event: E) throws {
        guard producer != nil else { preconditionFailure("emit on a Database without a producer name") }
        let body = String(decoding: try WireJSON.encode(event), as: UTF8.self)
        pending.append(PendingEvent(type: E.type, time: Timestamp.now(), body: body))
    }

    /// Runs `action` after the transaction commits (never if it rolls back): wakes work that
    /// the committed rows start.
    public func onCommit(_ action: @escaping @Sendable () -> Void) {
        committed.append(action)
    }

    /// Records that events from `producer` up to `seq` are applied, in this transaction (only
    /// `EventSubscriber` moves a cursor), provided the cursor still stands at `expected`.
    ///
    /// The condition fences replicas: if another replica applied and moved the cursor in the
    /// meantime (two briefly believed they were the active one), this throws and the
    /// transaction, with what it applied, rolls back, so no event is applied twice.
    /// - Throws: `CursorMoved` when the cursor is no longer at `expected`; `DatabaseError`.
    package func setCursor(_ seq: Int64, for producer: String, expected: Int64) throws {
        try connection.query(
            """
            INSERT INTO event_cursor(producer, seq) VALUES (\(producer), \(seq))
            ON CONFLICT(producer) DO UPDATE SET seq = excluded.seq WHERE event_cursor.seq = \(expected)
            """)
        guard connection.changes == 1 else { throw CursorMoved(producer: producer, expected: expected) }
    }
}

@available(*, unavailable, message: "Transaction is confined to its Database write queue")
extension Transaction: Sendable {}

/// A service's database, on SQLite or PostgreSQL (`DatabaseLocation`): one writer connection
/// on its own serial queue and a few reader connections on theirs (SQLite's WAL, PostgreSQL's
/// MVCC let them read while the writer writes). Blocking engine calls never run on Swift's
/// cooperative thread pool. On SQLite, a read made on a loop thread (`LoopExecutor`: the
/// service host's socket thread, where handlers run) runs inline on one more connection.
///
/// Writes are group-committed: writes that queue up while a transaction runs are applied
/// together in the next one, each in its own savepoint, so under load many small writes cost
/// one commit (one WAL append of the changed pages) instead of one each, and a write that
/// throws rolls back only itself. At most `maxWritesPerCommit` writes share a commit. On
/// PostgreSQL, where each statement is a round trip, a batch first runs without savepoints; if
/// a write throws, the batch is rolled back and runs again with them (so a write's body may run
/// twice: bodies change only the database, and what they emit or register goes with the
/// rolled-back attempt).
public final class Database: @unchecked Sendable {
    // @unchecked: each connection is only touched on its own serial DispatchQueue; `publisher`
    // is guarded by a lock; the other stored properties are immutable.
    private let writer: DatabaseConnection
    private let writeQueue: DispatchQueue
    private let readers: [(DatabaseConnection, DispatchQueue)]
    /// SQLite only: the read connection of a loop thread (`LoopExecutor`, a service host's socket
    /// thread), where a read runs inline instead of hopping to a reader queue and back.
    private let loopReader: (connection: DatabaseConnection, lock: NSLock)?
    /// The engine under this database.
    public let engine: StorageEngine
    /// The page cursors of this database (its own key: `PageCursor`).
    public let pageCursors: PageCursor
    private let nextReader = Atomic<Int>(0)
    private let producer: String?
    private let publisher = Locked<(@Sendable ([OutboxEvent]) -> Void)?>(nil)
    private let queued = Locked<(writes: [QueuedWrite], draining: Bool)>(([], false))
    /// Most writes applied in one transaction (each in its own savepoint).
    public let maxWritesPerCommit = 256
    private let writeCounts = Locked<(commits: Int64, writes: Int64)>((0, 0))

    /// `db.commits` (transactions committed) and `db.writes` (writes applied in them) since the
    /// database was opened; their ratio is the mean group-commit batch size.
    public func counters() -> [String: Int64] {
        let c = writeCounts.withLock { $0 }
        return ["db.commits": c.commits, "db.writes": c.writes]
    }

    /// A write of a batch run without savepoints threw: the batch is rolled back and runs again
    /// with a savepoint per write.
    private struct RetryWithSavepoints: Error {}

    /// How many times a write that threw `WriteConflict` runs again. Each conflict means another
    /// transaction committed first (the losing insert waited for it), so every retry follows
    /// progress; the bound only ends a write that keeps losing. 3 was too few: with two
    /// NotificationService replicas writing one recipient's notifications and groups at once, a
    /// follow lost four times in a row and answered 500 (ReplicaTests, a fresh-clone CI run).
    static let maxConflictRetries = 20

    /// A write of the batch lost a deadlock or a serialization race: the batch runs again.
    private struct TransientBatchFailure: Error {
        var error: any Error
    }

    /// A write waiting for the writer queue.
    private struct QueuedWrite: Sendable {
        /// The caller's request deadline in Unix ms (nil outside a request).
        let deadline: Int64?
        let body: @Sendable (Transaction) throws -> any Sendable
        let resume: @Sendable (Result<any Sendable, any Error>) -> Void
    }

    /// Opens the SQLite database at `path` (see `init(location:producer:migrations:legacy:readers:)`).
    /// - Throws: `DatabaseError`, `MigrationError`.
    public convenience init(
        path: String, producer: String?, migrations: [Migration], legacy: [Migration] = [], readers: Int = 2
    ) throws {
        try self.init(
            location: .sqlite(path: path), producer: producer, migrations: migrations, legacy: legacy, readers: readers)
    }

    /// Opens the database at `location` and applies the shared migrations (outbox, subscriber
    /// cursors), then `migrations` (see `Migrator`).
    /// - Parameters:
    ///   - producer: the service's producer name for events it emits (nil: emits none).
    ///   - legacy: the service's migrations from before they were named (SQLite only; see `Migrator`).
    ///   - readers: number of read connections.
    /// - Throws: `DatabaseError`, `MigrationError`.
    public init(
        location: DatabaseLocation, producer: String?, migrations: [Migration], legacy: [Migration] = [],
        readers: Int = 2
    ) throws {
        writer = try location.connect()
        engine = writer.engine
        try Migrator.migrate(writer, Outbox.migrations + PageCursor.migrations + migrations, legacy: legacy)
        pageCursors = try PageCursor.load(on: writer)
        writeQueue = DispatchQueue(label: "db.writer")
        var rs: [(DatabaseConnection, DispatchQueue)] = []
        for i in 0..<max(1, readers) {
            rs.append((try location.connect(), DispatchQueue(label: "db.reader.\(i)")))
        }
        self.readers = rs
        loopReader = engine == .sqlite ? (try location.connect(), NSLock()) : nil
        self.producer = producer
    }

    /// Sets where committed outbox events go (the service host's PUB socket loop).
    public func setPublisher(_ publish: @escaping @Sendable ([OutboxEvent]) -> Void) {
        publisher.set(publish)
    }

    /// Runs `body` in a write transaction on the writer queue, possibly together with other
    /// queued writes (each in its own savepoint, in arrival order; each sees the ones before it).
    /// Events it emits are handed to the publisher after the commit, in sequence order.
    /// - Throws: whatever `body` throws (only its own changes are rolled back), `DatabaseError`
    ///   (for a failed commit: nothing of the batch is written), or `WriteDeadlinePassed` when
    ///   called inside a request (`RequestDeadline.current`) whose deadline passed before the
    ///   writer reached it (nothing is written then).
    public func write<T: Sendable>(_ body: @escaping @Sendable (Transaction) throws -> T) async throws -> T {
        let deadline = RequestDeadline.current
        let result = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<any Sendable, any Error>) in
            let write = QueuedWrite(
                deadline: deadline, body: { try body($0) }, resume: { continuation.resume(with: $0) })
            let start = queued.withLock { q -> Bool in
                q.writes.append(write)
                if q.draining { return false }
                q.draining = true
                return true
            }
            if start { writeQueue.async { self.drainWrites() } }
        }
        return result as! T  // produced by this call's own body
    }

    /// Writes queued and not yet taken by the writer (for tests and diagnostics).
    var pendingWrites: Int { queued.withLock { $0.writes.count } }

    /// Applies queued writes, up to `maxWritesPerCommit` per transaction, until none are left
    /// (runs on the writer queue).
    private func drainWrites() {
        while true {
            let batch = queued.withLock { q -> [QueuedWrite] in
                let taken = Array(q.writes.prefix(maxWritesPerCommit))
                q.writes.removeFirst(taken.count)
                if taken.isEmpty { q.draining = false }
                return taken
            }
            if batch.isEmpty { return }
            var outcomes: [Result<any Sendable, any Error>] = []
            var events: [OutboxEvent] = []
            var pending: [PendingEvent] = []
            var afterCommit: [@Sendable () -> Void] = []
            // PostgreSQL: first without savepoints (two round trips a write fewer); a write
            // that throws rolls the whole batch back, and the batch runs again with them.
            var savepoints = engine == .sqlite || batch.count == 1
            var batchRetries = 0
            var failed = false
            while true {
                outcomes = []
                events = []
                pending = []
                afterCommit = []
                do {
                    // The batch's statements may run until the latest of its deadlines.
                    let deadlines = batch.map(\.deadline)
                    try writer.bound(by: deadlines.contains(nil) ? nil : deadlines.compactMap { $0 }.max())
                    try writer.execute(SQL.beginWrite)
                    for write in batch {
                        if let deadline = write.deadline, Timestamp.nowMs() > deadline {
                            outcomes.append(.failure(WriteDeadlinePassed()))
                            continue
                        }
                        var conflicts = 0
                        while true {
                            if savepoints { try writer.execute("SAVEPOINT w") }
                            let tx = Transaction(connection: writer, producer: producer)
                            do {
                                let result = try write.body(tx)
                                if savepoints { try writer.execute("RELEASE w") }
                                outcomes.append(.success(result))
                                pending += tx.pending
                                afterCommit += tx.committed
                            } catch {
                                guard savepoints else { throw RetryWithSavepoints() }
                                // A failure of the rollback itself leaves the outer catch to fail them all.
                                try writer.execute("ROLLBACK TO w")
                                try writer.execute("RELEASE w")
                                if error is WriteConflict && conflicts < Self.maxConflictRetries {
                                    conflicts += 1
                                    continue  // the other transaction has committed: run it again
                                }
                                // A deadlock may involve rows the batch's earlier writes hold:
                                // the whole batch runs again, after the other side went on.
                                if Self.isTransient(error) { throw TransientBatchFailure(error: error) }
                                outcomes.append(.failure(error))
                            }
                            break
                        }
                    }
                    events = try appendToOutbox(pending)
                    // Wakes the replica that publishes the outbox (see `Leadership`), at commit.
                    if !events.isEmpty { try writer.execute(Self.notifyOutbox) }
                    try writer.execute("COMMIT")
                    let applied = Int64(outcomes.count { if case .success = $0 { true } else { false } })
                    writeCounts.withLock {
                        $0.commits += 1
                        $0.writes += applied
                    }
                } catch is RetryWithSavepoints {
                    try? writer.execute("ROLLBACK")
                    savepoints = true
                    continue
                } catch is TransientBatchFailure where batchRetries < Self.maxConflictRetries {
                    // The batch again from BEGIN (its writes are closures: nothing of it committed).
                    try? writer.execute("ROLLBACK")
                    batchRetries += 1
                    continue
                } catch let failure as TransientBatchFailure {
                    try? writer.execute("ROLLBACK")
                    for write in batch { write.resume(.failure(failure.error)) }
                    failed = true
                } catch {
                    try? writer.execute("ROLLBACK")
                    for write in batch { write.resume(.failure(error)) }
                    failed = true
                }
                break
            }
            if failed { continue }
            if !events.isEmpty, let publish = publisher.get() { publish(events) }
            for action in afterCommit { action() }
            for (write, outcome) in zip(batch, outcomes) { write.resume(outcome) }
        }
    }

    /// Whether `error` is a deadlock (PostgreSQL's 40P01, where the server rolled this side
    /// back) or a serialization failure (40001): races between replicas writing the same rows
    /// in different orders, which running the batch again resolves (up to `maxConflictRetries`
    /// times: the other side of a deadlock went on).
    static func isTransient(_ error: any Error) -> Bool {
        (error as? DatabaseError)?.isTransient ?? false
    }

    /// `NOTIFY outbox` at a commit that appended to the outbox, on PostgreSQL: wakes the replica
    /// that publishes it (see `Leadership`). Nothing on SQLite (one process per file).
    private static let notifyOutbox = SQL.postgresOnly("NOTIFY \(Outbox.notifyChannel)")

    /// Appends a batch's events to the outbox, last before its commit, and returns them with
    /// their sequence numbers, in order.
    ///
    /// Last, because on PostgreSQL the numbers come from the one row of `outbox_head` under its
    /// row lock (see `Outbox`), held until the commit: taken earlier, a writer holding it could
    /// wait for a row another replica's transaction holds while that one waits for the head
    /// (deadlock 40P01, seen between two ProfileService replicas' likes). Taken last, a
    /// transaction that holds the head asks for no other lock, and it is held for one round
    /// trip. One statement per 100 events.
    private func appendToOutbox(_ pending: [PendingEvent]) throws -> [OutboxEvent] {
        guard let producer, !pending.isEmpty else { return [] }
        var events: [OutboxEvent] = []
        events.reserveCapacity(pending.count)
        func append(_ event: PendingEvent, _ seq: Int64) {
            let envelope = Outbox.envelope(producer: producer, seq: seq, type: event.type, time: event.time, body: event.body)
            events.append(OutboxEvent(seq: seq, type: event.type, envelope: envelope))
        }
        switch engine {
        case .sqlite:
            for event in pending {
                guard
                    let seq = try writer.scalar(
                        "INSERT INTO outbox(type, time, body) VALUES (\(event.type), \(event.time), \(event.body)) RETURNING seq")
                else { preconditionFailure("the outbox insert returned no seq") }
                append(event, seq)
            }
        case .postgres:
            var start = 0
            while start < pending.count {
                let chunk = pending[start..<min(start + 100, pending.count)]
                let seqs = try writer.query(Outbox.append(chunk))
                    .map { try $0.int64("seq") }.sorted()
                guard seqs.count == chunk.count else { preconditionFailure("the outbox insert returned \(seqs.count) seqs") }
                for (event, seq) in zip(chunk, seqs) { append(event, seq) }
                start += chunk.count
            }
        }
        return events
    }

    /// Runs `body` with a read connection on that connection's queue (no transaction is opened;
    /// open one with `BEGIN`/`COMMIT` for a consistent multi-statement read).
    public func read<T: Sendable>(_ body: @escaping @Sendable (DatabaseConnection) throws -> T) async throws -> T {
        let deadline = RequestDeadline.current
        // On SQLite, a read made on a loop thread runs there: a read of the local file costs
        // less than the two thread handoffs of the queue (and under WAL it never waits for the
        // writer). On PostgreSQL every read is a network round trip and keeps its queue.
        if loopReader != nil, LoopThread.isCurrent, let result = try readInline(body, deadline: deadline) {
            return result
        }
        let index = nextReader.add(1, ordering: .relaxed).oldValue % readers.count
        return try await withCheckedThrowingContinuation { continuation in
            readers[index].1.async {
                do {
                    let connection = self.readers[index].0
                    try connection.bound(by: deadline)
                    continuation.resume(returning: try body(connection))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Runs `body` on the loop thread's connection, nil when another thread holds it.
    private func readInline<T>(_ body: (DatabaseConnection) throws -> T, deadline: Int64?) throws -> T? {
        guard let loopReader, loopReader.lock.try() else { return nil }
        defer { loopReader.lock.unlock() }
        try loopReader.connection.bound(by: deadline)
        return try body(loopReader.connection)
    }

    /// The newest outbox sequence number (0 when empty), read synchronously on the writer queue.
    public func currentHead() -> Int64 {
        writeQueue.sync { (try? writer.scalar("SELECT COALESCE(MAX(seq), 0) FROM outbox")) ?? 0 }
    }

    /// The last sequence number applied from `producer` (0 if none), for `EventSubscriber`.
    /// - Throws: `DatabaseError`.
    package func cursor(for producer: String) async throws -> Int64 {
        try await read { try $0.scalar("SELECT seq FROM event_cursor WHERE producer = \(producer)") ?? 0 }
    }

    /// Outbox events with `seq > after`, oldest first, at most `limit` of them and at most
    /// `maxBytes` of envelope bodies (but at least one event when any follows `after`: a
    /// bulk import's event can be hundreds of KB, and a replay of hundreds of those must not
    /// become one reply of hundreds of MB), and the newest seq, read in one snapshot.
    public func outbox(after: Int64, limit: Int, maxBytes: Int = .max) async throws
        -> (head: Int64, events: [OutboxEvent])
    {
        let producer = self.producer ?? ""
        return try await read { conn in
            try conn.snapshot {
                let head = try conn.scalar("SELECT COALESCE(MAX(seq), 0) FROM outbox") ?? 0
                var events: [OutboxEvent] = []
                var bytes = 0
                var last = after
                // In pages, so that a budget reached early reads little beyond it.
                while events.count < limit {
                    let page = min(limit - events.count, 32)
                    let rows = try conn.query(
                        "SELECT seq, type, time, body FROM outbox WHERE seq > \(last) ORDER BY seq LIMIT \(page)")
                    for r in rows {
                        let body = try r.string("body")
                        bytes += body.utf8.count
                        if !events.isEmpty && bytes > maxBytes { return (head, events) }
                        let seq = try r.int64("seq")
                        let type = try r.string("type")
                        events.append(
                            OutboxEvent(
                                seq: seq, type: type,
                                envelope: Outbox.envelope(
                                    producer: producer, seq: seq, type: type, time: try r.string("time"), body: body)))
                        last = seq
                    }
                    if rows.count < page { break }
                }
                return (head, events)
            }
        }
    }
}
