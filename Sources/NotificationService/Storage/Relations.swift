import Messages
import Storage

/// How two users (`identities.key`) stand toward each other in the graph: follows, blocks,
/// mutes, pending requests, privacy (see `SafetySchema`). Each is one index seek; every function
/// reads on the caller's connection, in its snapshot or transaction.
enum Relations {
    /// Whether `follower` follows `followee`.
    static func follows(_ follower: Int64, _ followee: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM edges WHERE follower = \(follower) AND followee = \(followee)")
    }

    /// Whether `blocker` blocks `blocked`.
    static func blocks(_ blocker: Int64, _ blocked: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM blocks WHERE blocker = \(blocker) AND blocked = \(blocked)")
    }

    /// Whether either of the two blocks the other.
    static func blocked(_ a: Int64, _ b: Int64, on c: DatabaseConnection) throws -> Bool {
        try blocks(a, b, on: c) || blocks(b, a, on: c)
    }

    /// Whether `muter` mutes `muted`.
    static func mutes(_ muter: Int64, _ muted: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM mutes WHERE muter = \(muter) AND muted = \(muted)")
    }

    /// Whether `requester`'s request to follow `target` is pending.
    static func requested(_ requester: Int64, _ target: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM follow_requests WHERE requester = \(requester) AND target = \(target)")
    }

    /// Whether `user`'s account is private (ProfileService's flag, as its events said).
    static func isPrivate(_ user: Int64, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM private_accounts WHERE \"user\" = \(user)")
    }

    /// `viewer`'s follow state toward `user` (both keys; `self` is the caller's business).
    static func state(_ viewer: Int64, toward user: Int64, on c: DatabaseConnection) throws -> FollowState {
        if try follows(viewer, user, on: c) { return .following }
        return try requested(viewer, user, on: c) ? .requested : .notFollowing
    }

    /// Orders, on PostgreSQL, what concerns the pair `a`, `b` across replicas: a block, a follow,
    /// an accept take it exclusively, a notification between the two shares it, so a follow or a
    /// notification that raced a block either committed before it (and the block removes it) or
    /// runs after it and sees it: the block wins. A transaction-level advisory lock on two int4
    /// keys (PostgreSQL 9.27.10), released at commit; SQLite's one writer orders them already.
    /// - Throws: the engine's error.
    ///
    /// Both accounts' locks (`lockAccounts`) are taken shared in the same statement, after the
    /// pair's: whatever touches a pair also waits for a change of either account's state.
    static func lockPair(_ a: Int64, _ b: Int64, shared: Bool, in tx: Transaction) throws {
        let (low, high) = (min(a, b), max(a, b))
        try lock(
            [
                (pairSpace, hash(low &* 0x5851_F42D_4C95_7F2D ^ high), shared), (accountSpace, hash(a), true),
                (accountSpace, hash(b), true),
            ],
            in: tx)
    }

    /// The same for the posts `owner` fans out: a fan-out batch shares it while it reads the
    /// owner's followers and writes their notifications, a block of or by the owner takes it
    /// exclusively, so no batch that read an edge the block removes commits after the block.
    /// A shared lock also takes the owner's account lock shared, first (the order a block takes
    /// them in: account, then fan-out), so no batch of a fan-out commits after a change of the
    /// owner's state that it did not see.
    /// - Throws: the engine's error.
    static func lockFanOut(of owner: Int64, shared: Bool, in tx: Transaction) throws {
        try lock(
            (shared ? [(accountSpace, hash(owner), true)] : []) + [(fanOutSpace, hash(owner), shared)], in: tx)
    }

    /// Orders, on PostgreSQL, what involves the accounts `users` across replicas: a change of an
    /// account's state (`AccountStates.apply`, `AccountStates.erase`) takes its lock exclusively;
    /// every write that involves an account takes it shared (through `lockPair` and `lockFanOut`:
    /// a notification, a follow, a request, a block, a fan-out batch; here: a mute, a device, a
    /// read mark, a batch of `AccountWorker`). So such a write either committed before the change
    /// (and the worker, which starts after it, finds what it made) or sees the new state: nothing
    /// is made with a hidden or erased account. SQLite's one writer orders them already.
    /// - Throws: the engine's error.
    static func lockAccounts(_ users: [Int64], shared: Bool, in tx: Transaction) throws {
        try lock(users.sorted().map { (accountSpace, hash($0), shared) }, in: tx)
    }

    private static let pairSpace: Int32 = 0x5041
    private static let fanOutSpace: Int32 = 0x464F
    private static let accountSpace: Int32 = 0x4143

    /// Takes transaction-level advisory locks on (space, key) pairs, in order, in one statement
    /// (one round trip).
    private static func lock(_ locks: [(space: Int32, key: Int32, shared: Bool)], in tx: Transaction) throws {
        if locks.isEmpty { return }
        let calls = locks.map {
            "\($0.shared ? "pg_advisory_xact_lock_shared" : "pg_advisory_xact_lock")(\($0.space), \($0.key))"
        }
        try tx.connection.execute(.postgresOnly("SELECT \(calls.joined(separator: ", "))"))
    }

    /// 32 bits of `value` (its two halves folded).
    private static func hash(_ value: Int64) -> Int32 {
        Int32(truncatingIfNeeded: value ^ (value >> 32))
    }

    /// Whether `viewer` may see `user`'s lists: themselves, or not private, or an accepted follower.
    static func maySeeLists(_ viewer: Int64?, of user: Int64, on c: DatabaseConnection) throws -> Bool {
        guard let viewer else { return try !isPrivate(user, on: c) }
        return try viewer == user || !isPrivate(user, on: c) || follows(viewer, user, on: c)
    }
}
