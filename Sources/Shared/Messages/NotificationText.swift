import Wire

/// A notification's display text (API.md "Shapes": `alice liked your photo.`), rendered from
/// the actor's current username whenever it is shown, never stored with an old name.
public enum NotificationText {
    /// `<username> <what happened>`: `liked your photo.` / `liked your video.` (detail = post
    /// type), `started following you.`, `commented: <text>` (detail = the comment),
    /// `tagged you in a post.`, `shared a new post.`; a kind from a newer peer that this build
    /// cannot word: `sent you a notification.`.
    public static func render(type: NotificationKind, actorUsername: String, detail: String?) -> String {
        let what: String
        switch type {
        case .like: what = "liked your \(detail == "video" ? "video" : "photo")."
        case .follow: what = "started following you."
        case .comment: what = "commented: \(detail ?? "")"
        case .tag: what = "tagged you in a post."
        case .post: what = "shared a new post."
        case .followRequest: what = "requested to follow you."
        case .followAccepted: what = "accepted your follow request."
        case .unknown: what = "sent you a notification."
        }
        return "\(actorUsername) \(what)"
    }
}
