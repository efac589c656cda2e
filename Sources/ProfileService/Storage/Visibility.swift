import BackendKit
import Messages
import Storage
import Wire

/// What a viewer may do with a user's content (API.md "Privacy and safety").
enum Access: Equatable, Sendable {
    /// See it and act on it.
    case full
    /// The viewer blocks its owner: it is seen (a profile with "unblock"), nothing is done to it.
    case blocking
    /// Its owner blocks the viewer: to them it does not exist (404).
    case hidden
    /// A private account the viewer does not follow: the header only (403 `private_account`).
    case privateAccount

    /// Throws unless the content may be read.
    /// - Throws: 404 `not_found` (`what`) when hidden, 403 `private_account`.
    func requireReadable(_ what: String) throws {
        switch self {
        case .full, .blocking: return
        case .hidden: throw ServiceError.notFound(what)
        case .privateAccount: throw ServiceError(.privateAccount, message: "this account is private", status: 403)
        }
    }

    /// Throws unless the viewer may act on the content (like, comment, tag its owner).
    /// - Throws: as `requireReadable`, and 409 `blocking` when the viewer blocks its owner.
    func requireActionable(_ what: String) throws {
        try requireReadable(what)
        if self == .blocking {
            throw ServiceError(.blocking, message: "you block this account: unblock it first", status: 409)
        }
    }
}

/// ProfileService's replica of the follow graph's pairs it enforces, kept from
/// NotificationService's events (migration `profile.7-privacy-and-safety`):
///
/// - `graph_follows(follower, followee)`: every follow (`notification.follow.changed`,
///   `notification.follows.imported`), so a private account's grid is shown to its followers
///   without a round trip to NotificationService;
/// - `graph_blocks(blocker, blocked)`: every block (`notification.block.changed`);
/// - `profiles.is_private`: the flag this service owns.
///
/// The replica follows NotificationService's commits through its outbox, in order and exactly
/// once (`EventSubscriber`), so it lags by the event's delivery: for that moment after a block a
/// blocked user may still read the blocker's grid, and after an accept the follower may still
/// get 403; nothing they do there outlives the block (NotificationService refuses the
/// notification between the pair in the statement that would store it, and the block removes
/// what came before). The window is measured in the tests (`SafetyEndToEndTests`) and stated in
/// docs/privacy.md.
enum Visibility {
    static func migration(for id: String) -> Migration {
        Migration(
            id,
            """
            ALTER TABLE profiles ADD COLUMN is_private \(SQL.bigint) NOT NULL DEFAULT 0;
            CREATE TABLE graph_follows(follower TEXT NOT NULL, followee TEXT NOT NULL, PRIMARY KEY(follower, followee));
            CREATE INDEX graph_follows_by_followee ON graph_follows(followee, follower);
            CREATE TABLE graph_blocks(blocker TEXT NOT NULL, blocked TEXT NOT NULL, PRIMARY KEY(blocker, blocked));
            CREATE INDEX graph_blocks_by_blocked ON graph_blocks(blocked, blocker);
            """)
    }

    /// How `viewer` may treat `owner`'s content (ids), read on `c`.
    /// A suspended or deleted owner is hidden from everyone but itself, and such a viewer (a
    /// request already under way when its sessions ended) finds nothing (`AccountStates`).
    static func access(viewer: String, owner: String, on c: DatabaseConnection) throws -> Access {
        if viewer == owner { return .full }
        if try AccountStates.isHidden(owner, on: c) || AccountStates.isHidden(viewer, on: c) { return .hidden }
        if try blocks(owner, viewer, on: c) { return .hidden }
        if try blocks(viewer, owner, on: c) { return .blocking }
        if try isPrivate(owner, on: c), try !follows(viewer, owner, on: c) { return .privateAccount }
        return .full
    }

    static func blocks(_ blocker: String, _ blocked: String, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM graph_blocks WHERE blocker = \(blocker) AND blocked = \(blocked)")
    }

    static func follows(_ follower: String, _ followee: String, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM graph_follows WHERE follower = \(follower) AND followee = \(followee)")
    }

    static func isPrivate(_ user: String, on c: DatabaseConnection) throws -> Bool {
        try c.exists("SELECT 1 FROM profiles WHERE id = \(user) AND is_private <> 0")
    }

    /// A condition on a user id `column`: neither it blocks `viewer` nor `viewer` blocks it
    /// (each of them stops appearing in the other's lists), and its account is active.
    static func unblocked(_ column: SQL, viewer: String) -> SQL {
        """
        \(AccountStates.present(column)) AND NOT EXISTS (SELECT 1 FROM graph_blocks b WHERE b.blocker = \(column) AND b.blocked = \(viewer))
            AND NOT EXISTS (SELECT 1 FROM graph_blocks b WHERE b.blocker = \(viewer) AND b.blocked = \(column))
        """
    }

    /// A condition on a post owner's id `column`: `viewer` may read that owner's posts (not
    /// blocked by them; the owner active, and public, followed, or the viewer).
    static func readable(owner column: SQL, viewer: String) -> SQL {
        """
        \(AccountStates.present(column)) AND NOT EXISTS (SELECT 1 FROM graph_blocks b WHERE b.blocker = \(column) AND b.blocked = \(viewer))
            AND (\(column) = \(viewer) OR NOT EXISTS (SELECT 1 FROM profiles o WHERE o.id = \(column) AND o.is_private <> 0)
                OR EXISTS (SELECT 1 FROM graph_follows f WHERE f.follower = \(viewer) AND f.followee = \(column)))
        """
    }

    /// Applies a follow made (`following`) or ended, in `tx`.
    static func applyFollow(follower: String, followee: String, following: Bool, in tx: Transaction) throws {
        // An event that arrives after either account was erased brings nothing of it back.
        if following,
            try AccountStates.isErased(follower, on: tx.connection) || AccountStates.isErased(followee, on: tx.connection)
        {
            return
        }
        if following {
            try tx.query(
                """
                INSERT INTO graph_follows(follower, followee) VALUES (\(follower), \(followee))
                ON CONFLICT (follower, followee) DO NOTHING
                """)
        } else {
            try tx.query("DELETE FROM graph_follows WHERE follower = \(follower) AND followee = \(followee)")
        }
    }

    /// Applies a block made or lifted, in `tx`.
    static func applyBlock(blocker: String, blocked: String, blocking: Bool, in tx: Transaction) throws {
        if blocking, try AccountStates.isErased(blocker, on: tx.connection) || AccountStates.isErased(blocked, on: tx.connection)
        {
            return
        }
        if blocking {
            try tx.query(
                """
                INSERT INTO graph_blocks(blocker, blocked) VALUES (\(blocker), \(blocked))
                ON CONFLICT (blocker, blocked) DO NOTHING
                """)
        } else {
            try tx.query("DELETE FROM graph_blocks WHERE blocker = \(blocker) AND blocked = \(blocked)")
        }
    }

    /// The replica's subscriptions to NotificationService's events.
    static func subscribe(_ subscriber: EventSubscriber) {
        subscriber.on(Notifications.FollowChanged.self) { event, tx in
            let e = event.body
            try applyFollow(follower: e.followerId, followee: e.followeeId, following: e.following, in: tx)
            return .applied
        }
        subscriber.on(Notifications.FollowsImported.self) { event, tx in
            for follower in event.body.followerIds {
                try applyFollow(follower: follower, followee: event.body.followeeId, following: true, in: tx)
            }
            return .applied
        }
        subscriber.on(Notifications.BlockChanged.self) { event, tx in
            let e = event.body
            try applyBlock(blocker: e.blockerId, blocked: e.blockedId, blocking: e.blocking, in: tx)
            return .applied
        }
    }
}
