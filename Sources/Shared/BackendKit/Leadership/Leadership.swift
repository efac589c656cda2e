import Foundation
import ServiceKit
import Storage
import Support
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Which replica of a service is the active one: the one that publishes the outbox, applies the
/// events the service subscribes to and runs its background jobs (`LeaderOnly`). The other
/// replicas answer requests.
///
/// On PostgreSQL the active replica is the one holding the session-level advisory lock
/// `pg_try_advisory_lock(1768846196, 1)` ("inst", 1) in the service's database, on a connection
/// of its own that does nothing else. Advisory locks belong to their database, so every
/// service elects its own. A replica that is not active tries for the lock every
/// `retryMs` (500 ms). When the active replica dies, its connection closes and the server
/// releases the lock at once: another replica takes over within `retryMs` plus a round trip.
/// A replica whose lock connection fails or was replaced (a new backend pid: the session and
/// its lock are gone) stands down at once and competes again.
///
/// The same connection LISTENs on channel `outbox`: every commit that appends to the outbox
/// sends `NOTIFY outbox` (see `Database`), so the active replica learns of events other
/// replicas committed and publishes them (`OutboxRelay`).
///
/// On SQLite (one process per file) the one replica is always active.
public final class Leadership: Service {
    /// The advisory lock's two keys: "inst" as a big-endian int4, and 1.
    public static let lockKeys: (Int32, Int32) = (0x696E_7374, 1)

    private let url: String?
    private let logger: Logger
    private let retryMs: Int
    private let state = Locked<(active: Bool, watchers: [Int: AsyncStream<Bool>.Continuation], next: Int)>(
        (false, [:], 0))
    private let listeners = Locked<[@Sendable () -> Void]>([])
    private let stopped = Atomic<Bool>(false)
    private let changes = Atomic<Int>(0)

    /// - Parameters:
    ///   - location: the service's database: PostgreSQL elects, SQLite is always active.
    ///   - retryMs: how often a standing-by replica tries for the lock, in ms.
    public init(location: DatabaseLocation, logger: Logger, retryMs: Int = 500) {
        if case .postgres(let url) = location { self.url = url } else { self.url = nil }
        self.logger = logger
        self.retryMs = retryMs
    }

    /// Whether this replica is the active one now.
    public var isActive: Bool { state.withLock { $0.active } }

    /// How many times this replica became active or stood down (counter `leadership.changes`).
    public func counters() -> [String: Int64] {
        ["leadership.active": isActive ? 1 : 0, "leadership.changes": Int64(changes.load(ordering: .relaxed))]
    }

    /// The current state, then every change, until the caller stops iterating.
    public func updates() -> AsyncStream<Bool> {
        let (stream, continuation) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingNewest(8))
        let id = state.withLock { s -> Int in
            s.next += 1
            s.watchers[s.next] = continuation
            continuation.yield(s.active)
            return s.next
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) } }
        return stream
    }

    /// Hands every watcher the current state again (wakes a `LeaderOnly` that is stopping).
    public func poke() {
        let (active, watchers) = state.withLock { s in (s.active, Array(s.watchers.values)) }
        for w in watchers { w.yield(active) }
    }

    /// Calls `action` (on the election thread: keep it short) whenever a commit in another
    /// replica appended to the outbox.
    public func onOutboxNotification(_ action: @escaping @Sendable () -> Void) {
        listeners.withLock { $0.append(action) }
    }

    private func set(_ active: Bool) {
        let watchers = state.withLock { s -> [AsyncStream<Bool>.Continuation] in
            guard s.active != active else { return [] }
            s.active = active
            return Array(s.watchers.values)
        }
        guard !watchers.isEmpty || active else { return }
        changes.add(1, ordering: .relaxed)
        logger.info(active ? "leadership.acquired" : "leadership.released")
        for w in watchers { w.yield(active) }
    }

    /// Runs the election until cancelled; then closes its connection, which releases the lock.
    public func run() async {
        guard let url else {
            set(true)
            await waitForCancellation()
            return
        }
        let done = Doorbell()
        let thread = Thread { [self] in
            self.elect(url)
            done.ring()
        }
        thread.name = "leadership"
        thread.start()
        await waitForCancellation()
        stopped.store(true, ordering: .releasing)
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            Task {
                await done.wait()
                c.resume()
            }
        }
    }

    private func waitForCancellation() async {
        let (stream, _) = AsyncStream<Never>.makeStream()
        for await _ in stream {}
    }

    /// The election thread: one connection, the lock, LISTEN, and polls for notifications.
    private func elect(_ url: String) {
        var connection: PostgresConnection?
        var lockedPID: Int32?  // the session that holds the lock (nil: none)
        var listeningPID: Int32?
        var lastCheck: UInt64 = 0
        while !stopped.load(ordering: .acquiring) {
            do {
                if connection == nil { connection = try PostgresConnection(url: url) }
                guard let c = connection else { continue }
                let now = Self.monotonicMs()
                if let pid = lockedPID, c.backendPID != pid || !c.isConnected {
                    lockedPID = nil  // the session, and the lock with it, is gone
                    set(false)
                }
                if listeningPID != c.backendPID || !c.isConnected {
                    try c.listen(Outbox.notifyChannel)
                    listeningPID = c.backendPID
                }
                if lockedPID == nil, now >= lastCheck + UInt64(retryMs) {
                    lastCheck = now
                    if try c.tryAdvisoryLock(Self.lockKeys) {
                        lockedPID = c.backendPID
                        set(true)
                    }
                } else if lockedPID != nil, now >= lastCheck + 2_000 {
                    lastCheck = now
                    // A connection that died silently, or was replaced by a new session, shows
                    // here: the lock must still be this session's.
                    let held = try c.holdsAdvisoryLock(Self.lockKeys)
                    if !held || c.backendPID != lockedPID {
                        logger.warning("leadership.lost", metadata: ["reason": "the lock is no longer this session's"])
                        lockedPID = nil
                        set(false)
                        continue
                    }
                }
                // Notifications libpq read during a round trip above wait in its queue, not in
                // the socket: take those first, then wait for more.
                var channels = try c.notifications()
                if channels.isEmpty {
                    var descriptor = pollfd(fd: c.socketDescriptor, events: Int16(POLLIN), revents: 0)
                    if poll(&descriptor, 1, Int32(min(retryMs, 250))) > 0 { channels = try c.notifications() }
                }
                if !channels.isEmpty { for action in listeners.withLock({ $0 }) { action() } }
            } catch {
                if lockedPID != nil { logger.warning("leadership.lost", metadata: ["error": "\(error)"]) }
                lockedPID = nil
                listeningPID = nil
                set(false)
                Thread.sleep(forTimeInterval: Double(retryMs) / 1_000)  // back-off before the next attempt
            }
        }
        set(false)
        connection = nil  // PQfinish: the server releases the lock
    }

    private static func monotonicMs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000 + UInt64(ts.tv_nsec) / 1_000_000
    }
}
