import Wire

/// A notification's display text (API.md "Shapes": `alice liked your photo.`), rendered from
/// the actor's current username whenever it is shown, never stored with an old name.
public enum NotificationText {
    /// `<username> <what happened>`: `liked your photo.` / `liked your video.` (detail = post
    /// type), `started following you.`, `commented: <text>` (detail = the comment),
    /// `tagged you in a post.`, `shared a new post.`; a kind from a newer peer that this build
    /// cannot word: `sent you a notification.`. A `report_resolved` names nobody: its text is
    /// `reportResolved(detail:)`'s.
    public static func render(type: NotificationKind, actorUsername: String, detail: String?) -> String {
        let what: String
        switch type {
        case .reportResolved: return reportResolved(detail: detail)
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

extension NotificationText {
    /// The `detail` a `report_resolved` notification stores: `<action>:<target type>`, e.g.
    /// `remove_content:post` (see `Moderation.actions`, `Moderation.targetTypes`).
    public static func reportResolvedDetail(action: String, targetType: String) -> String {
        "\(action):\(targetType)"
    }

    /// A `report_resolved` notification's text (API.md "Account lifecycle and moderation"), which
    /// never names the moderator: `We removed the post you reported.` (`We removed the comment
    /// you reported.`) for `remove_content`, `We took action on the account you reported.` for
    /// `suspend_user`, `We reviewed your report.` for `dismiss` and anything else.
    public static func reportResolved(detail: String?) -> String {
        let parts = (detail ?? "").split(separator: ":", maxSplits: 1).map(String.init)
        switch (parts.first, parts.count > 1 ? parts[1] : nil) {
        case ("remove_content", "comment"): return "We removed the comment you reported."
        case ("remove_content", _): return "We removed the post you reported."
        case ("suspend_user", _): return "We took action on the account you reported."
        default: return "We reviewed your report."
        }
    }
}
