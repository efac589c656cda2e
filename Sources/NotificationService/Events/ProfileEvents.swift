import Shared

/// Turns ProfileService's events into notifications. Each event is applied idempotently and the
/// subscriber cursor is stored in the same transaction as its last change, so a replayed event
/// (after a restart or a gap) never makes a duplicate: the dedup key absorbs the repeats.
struct ProfileEvents: Sendable {
    let database: Database
    let users: UserDirectory
    let logger: Logger
    /// Recipients per write transaction during a new-post fan-out; other requests are answered
    /// between batches.
    var fanOutBatch = 2_000

    static let producer = "profile"

    /// Applies one event from producer `profile`.
    /// - Throws: `SQLiteError` or a decoding error (the subscriber retries, then skips).
    func deliver(_ event: ReceivedEvent) async throws {
        let seq = event.header.seq
        let producer = Self.producer
        if event.header.type == Profile.PostCreated.type {
            try await postCreated(try event.decode(Profile.PostCreated.self), seq: seq, time: event.header.time)
            return
        }
        let done = try await database.write { tx -> Bool in
            guard try Self.apply(event, actorName: nil, fanOutLimit: 0, in: tx) else { return false }
            try tx.setCursor(seq, for: producer)
            return true
        }
        if done { return }
        // The replica does not know the actor yet: ask AuthService, outside the transaction.
        guard let actorId = try Self.actorId(of: event) else { return }
        let name = await users.displayName(actorId)
        try await database.write { tx in
            _ = try Self.apply(event, actorName: name, fanOutLimit: 0, in: tx)
            try tx.setCursor(seq, for: producer)
        }
    }

    /// Applies a prefix of `events` (consecutive, from producer `profile`) in one transaction
    /// with the cursor of the last one: likes, comments, deletions and new posts whose fan-out
    /// fits one batch (`fanOutBatch` recipients), up to the first larger fan-out or the first
    /// actor the replica does not know. Such an event at the front goes through `deliver` alone.
    /// - Returns: how many events were applied (at least 1).
    /// - Throws: as `deliver`; nothing of the prefix is applied then.
    func deliverBatch(_ events: [ReceivedEvent]) async throws -> Int {
        guard let first = events.first else { return 0 }
        let producer = Self.producer
        let fanOutLimit = fanOutBatch
        let applied = try await database.write { tx -> Int in
            var applied = 0
            for event in events {
                guard try Self.apply(event, actorName: nil, fanOutLimit: fanOutLimit, in: tx) else { break }
                applied += 1
            }
            if applied > 0 { try tx.setCursor(events[applied - 1].header.seq, for: producer) }
            return applied
        }
        if applied > 0 { return applied }
        try await deliver(first)
        return 1
    }

    /// The user whose action a like or comment event reports (nil for other events).
    private static func actorId(of event: ReceivedEvent) throws -> String? {
        switch event.header.type {
        case Profile.PostLiked.type: try event.decode(Profile.PostLiked.self).userId
        case Profile.PostCommented.type: try event.decode(Profile.PostCommented.self).userId
        default: nil
        }
    }

    /// Applies one event in `tx` (the cursor is the caller's). Notifications name the actor:
    /// `actorName`, or the replica's name for them. A new post is applied here only when its
    /// tags and fan-out together take at most `fanOutLimit` notifications.
    /// - Returns: false, having changed nothing, when the actor's name is needed and unknown, or
    ///   for a new post with a larger fan-out (or any new post when `fanOutLimit` is 0).
    private static func apply(_ event: ReceivedEvent, actorName: String?, fanOutLimit: Int, in tx: Transaction)
        throws -> Bool
    {
        func name(_ id: String) throws -> String? {
            try actorName ?? UserDirectory.replicaName(id, on: tx.connection)
        }
        let time = event.header.time
        switch event.header.type {
        case Profile.PostLiked.type:
            let e = try event.decode(Profile.PostLiked.self)
            guard let actor = try name(e.userId) else { return false }
            try NotificationStore.insert(
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: "like", objectId: e.postId,
                    text: "\(actor) liked your \(e.postType == "video" ? "video" : "photo").",
                    post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: time), in: tx)
        case Profile.PostCommented.type:
            let e = try event.decode(Profile.PostCommented.self)
            guard let actor = try name(e.userId) else { return false }
            try NotificationStore.insert(
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: "comment", objectId: e.commentId,
                    text: "\(actor) commented: \(e.text)",
                    post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: time), in: tx)
        case Profile.PostDeleted.type:
            let e = try event.decode(Profile.PostDeleted.self)
            _ = try NotificationStore.deleteAbout(postId: e.postId, in: tx)
        case Profile.PostCreated.type:
            guard fanOutLimit > 0 else { return false }
            let e = try event.decode(Profile.PostCreated.self)
            let tagged = Self.taggedRecipients(e)
            let followers = try tx.query(Self.fanOutPage, [e.ownerId, "", fanOutLimit + 1])
            guard tagged.count + followers.count <= fanOutLimit, let actor = try name(e.ownerId) else { return false }
            for user in tagged { try Self.notify(user, of: e, type: "tag", actor: actor, time: time, in: tx) }
            for row in followers { try Self.notify(row.string(0), of: e, type: "post", actor: actor, time: time, in: tx) }
        default:
            break
        }
        return true
    }

    /// One page of a followee's `notifyPosts` followers after a follower id (`""` for the first),
    /// in follower-id order. Parameters: followee id, last follower id, limit.
    private static let fanOutPage = """
        SELECT follower_id FROM follows
        WHERE followee_id = ? AND notify_posts = 1 AND follower_id > ? ORDER BY follower_id LIMIT ?
        """

    /// The users tagged in a new post, without its author, once each, in a stable order.
    private static func taggedRecipients(_ e: Profile.PostCreated) -> [String] {
        Array(Set(e.taggedUserIds)).filter { $0 != e.ownerId }.sorted()
    }

    /// Stores the notification a new post makes for `recipient`: `tag` (tagged in it) or `post`
    /// (a follower with notifyPosts).
    private static func notify(
        _ recipient: String, of e: Profile.PostCreated, type: String, actor: String, time: String, in tx: Transaction
    ) throws {
        try NotificationStore.insert(
            NewNotification(
                recipientId: recipient, actorId: e.ownerId, type: type, objectId: e.postId,
                text: type == "tag" ? "\(actor) tagged you in a post." : "\(actor) shared a new post.",
                post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: time), in: tx)
    }

    /// Tags, then the fan-out to every follower with `notifyPosts`, `fanOutBatch` recipients per
    /// transaction, in recipient-id order; the cursor is stored with the last batch.
    private func postCreated(_ e: Profile.PostCreated, seq: Int64, time: String) async throws {
        let producer = Self.producer
        let actor = await users.displayName(e.ownerId)
        let tagged = Self.taggedRecipients(e)
        try await database.write { tx in
            for user in tagged { try Self.notify(user, of: e, type: "tag", actor: actor, time: time, in: tx) }
        }
        let batch = fanOutBatch
        var after = ""
        var total = 0
        let started = Timestamp.nowMs()
        while true {
            let from = after
            // In recipient order: consecutive batches insert into neighbouring pages of the
            // notification indexes (keyed by recipient), so each index page is written about
            // once per fan-out instead of once per batch.
            let (last, count) = try await database.write { tx -> (String, Int) in
                let rows = try tx.query(Self.fanOutPage, [e.ownerId, from, batch])
                for r in rows { try Self.notify(r.string(0), of: e, type: "post", actor: actor, time: time, in: tx) }
                if rows.count < batch { try tx.setCursor(seq, for: producer) }
                return (rows.last?.string(0) ?? from, rows.count)
            }
            total += count
            if count < batch { break }
            after = last
        }
        if total > 0 {
            logger.info(
                "fanout.done",
                metadata: [
                    "post": e.postId, "recipients": "\(total)", "ms": "\(Timestamp.nowMs() - started)",
                ])
        }
    }
}
