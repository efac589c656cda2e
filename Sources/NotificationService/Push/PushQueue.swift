import Shared

/// What the notification writer and the push senders of one process share: the clock the queue's
/// times are read from (Unix ms; tests move it) and the doorbell that wakes this process's
/// sender when a commit queued pushes. Nil in the writer when push is off: then nothing is
/// queued (no sender would ever drain it).
final class PushQueue: Sendable {
    let clock: @Sendable () -> Int64
    let doorbell = Doorbell()

    init(clock: @escaping @Sendable () -> Int64 = { Timestamp.nowMs() }) {
        self.clock = clock
    }

    /// Rings the doorbell once `tx` commits.
    func wakeOnCommit(_ tx: Transaction) {
        let doorbell = self.doorbell
        tx.onCommit { doorbell.ring() }
    }

    /// The `apns-collapse-id` stored with a single notification's push: a newer push with the
    /// same id replaces the older one on the device. Likes and comments on one post, and one
    /// day's follows, collapse into the newest (their group, `NotificationGroupKey`: `like:<postId>`,
    /// `comment:<postId>`, `follow:<YYYY-MM-DD>`), as the notifications screen groups them; a tag
    /// or a new post stands alone: nil here, and the sender uses the notification's own id, so
    /// that a push sent twice (see `PushSender`) replaces itself instead of showing twice.
    /// Nil too for a key over APNs' 64 bytes.
    static func collapseID(for n: Notifications.Notification) -> String? {
        switch n.type {
        case .like, .comment, .follow:
            let key = NotificationGroupKey.of(n)
            return key.utf8.count <= 64 ? key : nil
        case .tag, .post, .unknown: return nil
        }
    }
}
