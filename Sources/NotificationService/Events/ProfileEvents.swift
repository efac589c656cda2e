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
        switch event.header.type {
        case Profile.PostLiked.type:
            let e = try event.decode(Profile.PostLiked.self)
            try await notifyOne(actorId: e.userId, seq: seq) { actor in
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: "like", objectId: e.postId,
                    text: "\(actor) liked your photo.",
                    post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: event.header.time)
            }
        case Profile.PostCommented.type:
            let e = try event.decode(Profile.PostCommented.self)
            try await notifyOne(actorId: e.userId, seq: seq) { actor in
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: "comment", objectId: e.commentId,
                    text: "\(actor) commented: \(e.text)",
                    post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: event.header.time)
            }
        case Profile.PostCreated.type:
            try await postCreated(
                try event.decode(Profile.PostCreated.self), seq: seq, time: event.header.time)
        case Profile.PostDeleted.type:
            let e = try event.decode(Profile.PostDeleted.self)
            try await database.write { tx in
                _ = try NotificationStore.deleteAbout(postId: e.postId, in: tx)
                try tx.setCursor(seq, for: producer)
            }
        default:
            try await database.write { tx in try tx.setCursor(seq, for: producer) }
        }
    }

    /// Stores one notification made by `make(actorName)` and the cursor, in one transaction
    /// (one queue hop) when the replica knows the actor; otherwise asks AuthService first.
    private func notifyOne(
        actorId: String, seq: Int64, _ make: @escaping @Sendable (String) -> NewNotification
    ) async throws {
        let producer = Self.producer
        let done = try await database.write { tx -> Bool in
            guard let name = try UserDirectory.replicaName(actorId, on: tx.connection) else {
                return false
            }
            try NotificationStore.insert(make(name), in: tx)
            try tx.setCursor(seq, for: producer)
            return true
        }
        if done { return }
        let name = await users.displayName(actorId)
        try await database.write { tx in
            try NotificationStore.insert(make(name), in: tx)
            try tx.setCursor(seq, for: producer)
        }
    }

    /// Tags, then the fan-out to every follower with `notifyPosts`, `fanOutBatch` recipients per
    /// transaction, in edge-key order; the cursor is stored with the last batch.
    private func postCreated(_ e: Profile.PostCreated, seq: Int64, time: String) async throws {
        let producer = Self.producer
        let actor = await users.displayName(e.ownerId)
        let post = Graph.Notification.PostRef(id: e.postId, thumbnailURL: e.thumbnailURL)
        let tagged = Array(Set(e.taggedUserIds)).filter { $0 != e.ownerId }.sorted()
        try await database.write { tx in
            for user in tagged {
                try NotificationStore.insert(
                    NewNotification(
                        recipientId: user, actorId: e.ownerId, type: "tag", objectId: e.postId,
                        text: "\(actor) tagged you in a post.", post: post, createdAt: time), in: tx)
            }
        }
        let batch = fanOutBatch
        var after: Int64 = 0
        var total = 0
        let started = Timestamp.nowMs()
        while true {
            let from = after
            let (last, count) = try await database.write { tx -> (Int64, Int) in
                let rows = try tx.query(
                    """
                    SELECT key, follower_id FROM follows
                    WHERE followee_id = ? AND notify_posts = 1 AND key > ? ORDER BY key LIMIT ?
                    """, [e.ownerId, from, batch])
                for r in rows {
                    try NotificationStore.insert(
                        NewNotification(
                            recipientId: r.string(1), actorId: e.ownerId, type: "post", objectId: e.postId,
                            text: "\(actor) shared a new post.", post: post, createdAt: time), in: tx)
                }
                if rows.count < batch { try tx.setCursor(seq, for: producer) }
                return (rows.last?.int(0) ?? from, rows.count)
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
