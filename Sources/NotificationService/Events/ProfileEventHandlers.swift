import BackendKit
import Messages
import Wire

/// Turns ProfileService's events into notifications, each applied in the subscriber's
/// transaction together with the subscriber's cursor, so a restart or a replay never applies an
/// event twice (and should a cursor ever go back, every notification has a dedup key: the
/// same like, follow, comment, tag or post fan-out notifies nobody twice): likes → `like` (an unlike removes it; liking again makes a new one, never pushed twice), comments → `comment` (a deleted comment removes it), new posts → `tag` for the tagged users
/// and `post` for followers with `notifyPosts` (through `FanOutWorker`), deleted posts → their
/// notifications removed (also through the worker when there are many), profile changes (and
/// new profiles) → the actor replica (`ActorProfiles`). The actor's public fields that an event
/// carries go on the live messages; a notification whose event carries none (a follow) gets
/// them from the replica. An event that involves an erased account (one that arrives after its
/// erasure, `AccountStates`) changes nothing: it recreates no post, profile or notification.
struct ProfileEventHandlers: Sendable {
    let notifications: NotificationWriter
    let jobs: FanOutWorker

    /// The event's time (RFC 3339) in Unix ms; now when it cannot be read.
    static func ms(_ time: String) -> Int64 { Timestamp.parse(time) ?? Timestamp.nowMs() }

    func subscribe(_ subscriber: EventSubscriber) {
        let notifications = self.notifications
        let jobs = self.jobs
        subscriber.on(Profile.PostLiked.self) { event, tx in
            let e = event.body
            if try AccountStates.anyErased([e.ownerId, e.userId], on: tx.connection) { return .applied }
            try notifications.insert(
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: .like, detail: e.postType ?? "photo",
                    post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: Self.ms(event.header.time),
                    actor: e.user),
                in: tx)
            return .applied
        }
        subscriber.on(Profile.PostUnliked.self) { event, tx in
            try NotificationWriter.removeLike(
                recipientId: event.body.ownerId, actorId: event.body.userId, postId: event.body.postId, in: tx)
            return .applied
        }
        subscriber.on(Profile.PostCommented.self) { event, tx in
            let e = event.body
            if try AccountStates.anyErased([e.ownerId, e.userId], on: tx.connection) { return .applied }
            try notifications.insert(
                NewNotification(
                    recipientId: e.ownerId, actorId: e.userId, type: .comment, commentId: e.commentId, detail: e.text,
                    post: .init(id: e.postId, thumbnailURL: e.thumbnailURL), createdAt: Self.ms(event.header.time),
                    actor: e.user),
                in: tx)
            return .applied
        }
        subscriber.on(Profile.CommentDeleted.self) { event, tx in
            try NotificationWriter.removeComment(
                recipientId: event.body.ownerId, actorId: event.body.userId, commentId: event.body.commentId, in: tx)
            return .applied
        }
        subscriber.on(Profile.PostDeleted.self) { event, tx in
            if let post = try Keys.existingPost(event.body.postId, on: tx.connection) {
                try jobs.purge(post: post, in: tx)
            }
            return .applied
        }
        subscriber.on(Profile.ProfileChanged.self) { event, tx in
            let user = event.body.user
            if try AccountStates.isErased(id: user.id, on: tx.connection) { return .applied }
            try ActorProfiles.apply(user, in: tx)
            try SafetyStore.setPrivate(
                user: UserRef(id: user.id, username: user.username), isPrivate: user.isPrivate,
                nowMs: Self.ms(event.header.time), notifications: notifications, in: tx)
            return .applied
        }
        subscriber.on(Profile.PostCreated.self) { event, tx in
            let e = event.body
            if try AccountStates.isErased(id: e.ownerId, on: tx.connection) { return .applied }
            let time = Self.ms(event.header.time)
            let ref = Notifications.Notification.PostRef(id: e.postId, thumbnailURL: e.thumbnailURL)
            for user in Array(Set(e.taggedUserIds)).filter({ $0 != e.ownerId }).sorted() {
                try notifications.insert(
                    NewNotification(
                        recipientId: user, actorId: e.ownerId, type: .tag, detail: nil, post: ref, createdAt: time,
                        actor: e.owner),
                    in: tx)
            }
            try jobs.start(
                FanOutJob.make(
                    postId: e.postId, ownerId: e.ownerId, thumbnailURL: e.thumbnailURL, createdAt: time,
                    ownerUser: e.owner, in: tx),
                in: tx)
            return .applied
        }
        // Resolved reports → the reporters' `report_resolved` notifications.
        ReportEventHandlers(notifications: notifications).subscribe(subscriber)
    }
}
