import Messages
import Storage
import Support
import Wire

/// What the notification writer and the push senders of one process share: the clock the queue's
/// times are read from (Unix ms; tests move it) and the doorbell that wakes this process's
/// sender when a commit queued pushes. Nil in the writer when push is off: then nothing is
/// queued (no sender would ever drain it).
final class PushQueue: Sendable {
    let clock: @Sendable () -> Int64
    let doorbell = Doorbell()
    /// The device environments (`sandbox`, `production`) the transport reaches: only their
    /// devices get pushes queued. A device token is valid only against the APNs environment it
    /// was issued for (Apple, "Sending notification requests to APNs": the development server
    /// for sandbox tokens), and sending it to the other answers 400 BadDeviceToken, which would
    /// remove a live device. See `environments(forURL:)`.
    let environments: Set<String>

    init(
        clock: @escaping @Sendable () -> Int64 = { Timestamp.nowMs() },
        environments: Set<String> = ["sandbox", "production"]
    ) {
        self.clock = clock
        self.environments = environments
    }

    /// The environments an APNs base URL serves: Apple's development host
    /// (`api.sandbox.push.apple.com`) sandbox devices, its production host (`api.push.apple.com`)
    /// production ones, and any other host (a stand-in, a proxy) both.
    static func environments(forURL url: String) -> Set<String> {
        let authority = url.lowercased().split(separator: "/").dropFirst().first?.split(separator: ":").first ?? ""
        // A fully qualified name may end in a dot (`api.push.apple.com.`).
        let host = authority.hasSuffix(".") ? authority.dropLast() : authority
        switch host {
        case "api.sandbox.push.apple.com", "api.development.push.apple.com": return ["sandbox"]
        case "api.push.apple.com": return ["production"]
        default: return ["sandbox", "production"]
        }
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
        case .tag, .post, .followRequest, .followAccepted, .reportResolved, .unknown: return nil
        }
    }
}
