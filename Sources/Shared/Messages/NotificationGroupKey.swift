import Wire

/// The group key of a notification (API.md "Grouped notifications"): `like:<postId>`,
/// `comment:<postId>`, `follow:<YYYY-MM-DD>` (the UTC day of `createdAt`), `tag:<id>` and
/// `post:<id>` (never grouped), `<kind>:<id>` for a kind this build does not know. The same key
/// a `Notifications.Group` of that notification carries.
public enum NotificationGroupKey {
    /// The key of `n`.
    public static func of(_ n: Notifications.Notification) -> String {
        switch n.type {
        case .like, .comment: "\(n.type.wire):\(n.post?.id ?? n.id)"
        case .follow: "follow:\(n.createdAt.prefix(10))"
        case .tag, .post, .followRequest, .followAccepted, .reportResolved, .unknown: "\(n.type.wire):\(n.id)"
        }
    }

    /// `follow:<YYYY-MM-DD>` of UTC day `day` (days since 1970-01-01).
    public static func follow(day: Int64) -> String {
        "follow:\(Timestamp.format(ms: day * 86_400_000).prefix(10))"
    }
}

extension NotificationText {
    /// A group's text (API.md "Grouped notifications"): `alice liked your photo.`, `alice and
    /// bob liked your photo.`, `alice, bob and 12 others liked your photo.` (`1 other`); the
    /// same with `commented on your photo.` and `started following you.`; `video` for a like
    /// group whose `detail` is `video`. `usernames`: the newest actors' current names, newest
    /// first (up to 3 distinct); `count`: the group's notifications. A comment group counts
    /// comments, and one person may comment many times: with fewer than 3 distinct commenters
    /// the text names exactly them ("alice commented on your photo." for alice's three
    /// comments); with 3 or more, "others" is the comments beyond the two named (people are
    /// not counted). A `tag` or `post` group (one notification) reads as the notification
    /// (`render`).
    public static func renderGroup(type: NotificationKind, usernames: [String], count: Int, detail: String?) -> String {
        let what: String
        switch type {
        case .like: what = "liked your \(detail == "video" ? "video" : "photo")."
        case .comment: what = "commented on your \(detail == "video" ? "video" : "photo")."
        case .follow: what = "started following you."
        case .tag, .post, .followRequest, .followAccepted, .reportResolved, .unknown:
            return render(type: type, actorUsername: usernames.first ?? "", detail: detail)
        }
        // The people in the group: one notification each for likes and follows; for comments,
        // the distinct commenters when there are fewer than 3 of them.
        let count = type == .comment && usernames.count < 3 ? usernames.count : count
        let names = Array(usernames.prefix(count >= 3 ? 2 : count))
        let others = count - names.count
        let who: String
        switch (names.count, others) {
        case (0, _): who = "someone"
        case (1, 0): who = names[0]
        case (2, 0): who = "\(names[0]) and \(names[1])"
        case (1, _): who = "\(names[0]) and \(others) \(others == 1 ? "other" : "others")"
        default: who = "\(names[0]), \(names[1]) and \(others) \(others == 1 ? "other" : "others")"
        }
        return "\(who) \(what)"
    }
}
