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
    static func lockPair(_ a: Int64, _ b: Int64, shared: Bool, in tx: Transaction) throws {
        let (low, high) = (min(a, b), max(a, b))
        try lock(0x5041, hash(low &* 0x5851_F42D_4C95_7F2D ^ high), shared: shared, in: tx)
    }

    /// The same for the posts `owner` fans out: a fan-out batch shares it while it reads the
    /// owner's followers and writes their notifications, a block of or by the owner takes it
    /// exclusively, so no batch that read an edge the block removes commits after the block.
    /// - Throws: the engine's error.
    static func lockFanOut(of owner: Int64, shared: Bool, in tx: Transaction) throws {
        try lock(0x464F, hash(owner), shared: shared, in: tx)
    }

    private static func lock(_ space: Int32, _ key: Int32, shared: Bool, in tx: Transaction) throws {
        let function = shared ? "pg_advisory_xact_lock_shared" : "pg_advisory_xact_lock"
        try tx.connection.execute(.postgresOnly("SELECT \(function)(\(space), \(key))"))
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
