import Shared

/// Turns ProfileService's events into notifications. Each is applied idempotently in the
/// subscriber's transaction (the dedup key absorbs a replayed event), so a restart or a replay
/// never makes a duplicate: likes → `like`, comments → `comment`, new posts → `tag` for the
/// tagged users and `post` for followers with `notifyPosts` (through `FanOutWorker`), deleted
/// posts → their notifications removed.
struct ProfileEventHandlers: Sendable {
    let fanOut: FanOutWorker

    func subscribe(_ subscriber: EventSubscriber) {
        subscriber.on(Profile.PostLiked.self) { event, tx in
            let e = event.body
            try SQLiteNotificationStore.insert(
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: "like", objectId: e.postId,
                    detail: e.postType ?? "photo", post: .init(id: e.postId, thumbnailURL: e.thumbnailURL),
                    createdAt: event.header.time), in: tx)
            return .applied
        }
        subscriber.on(Profile.PostCommented.self) { event, tx in
            let e = event.body
            try SQLiteNotificationStore.insert(
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: "comment", objectId: e.commentId, detail: e.text,
                    post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: event.header.time), in: tx)
            return .applied
        }
        subscriber.on(Profile.PostDeleted.self) { event, tx in
            _ = try SQLiteNotificationStore.deleteAbout(postId: event.body.postId, in: tx)
            try FanOutWorker.cancel(postId: event.body.postId, in: tx)
            return .applied
        }
        let fanOut = self.fanOut
        subscriber.on(Profile.PostCreated.self) { event, tx in
            let e = event.body
            for user in Array(Set(e.taggedUserIds)).filter({ $0 != e.ownerId }).sorted() {
                try SQLiteNotificationStore.insert(
                    NewNotification(
                        recipientId: user, actorId: e.ownerId, type: "tag", objectId: e.postId, detail: nil,
                        post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: event.header.time), in: tx)
            }
            try fanOut.start(
                FanOutJob(postId: e.postId, ownerId: e.ownerId, thumbnailURL: e.thumbnailURL, createdAt: event.header.time),
                in: tx)
            return .applied
        }
    }
}
