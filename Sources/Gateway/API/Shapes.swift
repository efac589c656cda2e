import Messages
import Wire

// The API's JSON shapes (../shared/API.md "Shapes") as `Encodable` types. `JSONWriter` writes
// every optional member, absent ones as `null`, and every object's members in sorted order. `PublicUser`, `Me`, `Profile.Post`,
// `Profile.Comment`, `Profile.EditForm.Reply` and `Page` come from Shared as they are.

/// `{user: Me, token, expiresAt}`: the reply to register and login.
struct SessionShape: Encodable {
    var user: Me
    var token: String
    var expiresAt: String
}

/// `{followers, following, posts}`.
struct CountsShape: Encodable {
    var followers: Int
    var following: Int
    var posts: Int
}

/// The profile header: `{user, counts, followState}`.
struct ProfileHeaderShape: Encodable {
    var user: PublicUser
    var counts: CountsShape
    var followState: FollowState
    /// The caller's view of the user (all false for oneself): API.md "Privacy and safety".
    var blocking: Bool
    var muting: Bool
    var followsYou: Bool
}

/// A page `{items, nextCursor}` of API shapes (`nextCursor` null on the last page).
struct PageShape<Item: Encodable>: Encodable {
    var items: [Item]
    var nextCursor: String?
}

/// A list entry `{user, followState}`.
struct UserEntryShape: Encodable {
    var user: PublicUser
    var followState: FollowState
}

/// `Notification`: the stored one with its actor resolved and its text rendered from the
/// actor's current username.
struct NotificationShape: Encodable {
    var id: String
    var seq: Int64
    var type: NotificationKind
    var text: String
    var createdAt: String
    var read: Bool
    var actor: PublicUser
    var post: Notifications.Notification.PostRef?
    var followState: FollowState?
    /// The key of the group this notification belongs to (`NotificationGroupKey`).
    var groupKey: String

    init(_ n: Notifications.Notification, actor: PublicUser) {
        groupKey = NotificationGroupKey.of(n)
        id = n.id
        seq = n.seq
        type = n.type
        text = NotificationText.render(type: n.type, actorUsername: actor.username, detail: n.detail)
        createdAt = n.createdAt
        read = n.read
        self.actor = actor
        post = n.post
        followState = n.followState
    }

    /// One Server-Sent Events message (WHATWG HTML §9.2): `id: <seq>`, `event: notification`,
    /// `data: <json>`, a blank line.
    func sseEvent() -> [UInt8] {
        var bytes = Array("id: \(seq)\nevent: notification\ndata: ".utf8)
        bytes += PublicLinks.current.absolutized((try? JSONWriter.encode(self)) ?? Array("{}".utf8))
        bytes += Array("\n\n".utf8)
        return bytes
    }
}

/// A page of notifications plus the unread count.
struct NotificationPageShape: Encodable {
    var items: [NotificationShape]
    var nextCursor: String?
    var unreadCount: Int
}

/// `NotificationGroup` (API.md "Grouped notifications"): a stored group with its actors
/// resolved and its text rendered from their current usernames.
struct NotificationGroupShape: Encodable {
    var key: String
    var type: NotificationKind
    var count: Int
    /// The 3 most recent actors, newest first.
    var actors: [PublicUser]
    var text: String
    var post: Notifications.Notification.PostRef?
    var followState: FollowState?
    var latestSeq: Int64
    var latestAt: String
    var read: Bool

    init(_ g: Notifications.Group, actors: [PublicUser]) {
        key = g.key
        type = g.type
        count = g.count
        self.actors = actors
        text = NotificationText.renderGroup(type: g.type, usernames: actors.map(\.username), count: g.count, detail: g.detail)
        post = g.post
        followState = g.followState
        latestSeq = g.latestSeq
        latestAt = g.latestAt
        read = g.read
    }
}

/// A page of notification groups plus the unread count.
struct NotificationGroupPageShape: Encodable {
    var items: [NotificationGroupShape]
    var nextCursor: String?
    var unreadCount: Int
}

/// The settings screen. An action carries only the members of its type (`{type: "toggle",
/// value}`, `{type: "open_url", url}`, ...), never nulls for the others.
struct SettingsShape: Encodable {
    var settings: Profile.Settings

    func encode(to encoder: any Encoder) throws {
        try SettingsBody(sections: settings.sections.map { s in SectionBody(title: s.title, items: s.items.map(ItemBody.init)) })
            .encode(to: encoder)
    }

    private struct SettingsBody: Encodable { var sections: [SectionBody] }
    private struct SectionBody: Encodable {
        var title: String
        var items: [ItemBody]
    }
    private struct ItemBody: Encodable {
        var item: Profile.Settings.Item
        init(_ item: Profile.Settings.Item) { self.item = item }
        enum Keys: String, CodingKey { case id, title, action }
        enum ActionKeys: String, CodingKey { case type, text, url, value, confirmTitle, confirmMessage }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(item.id, forKey: .id)
            try c.encode(item.title, forKey: .title)
            try c.encode(ActionBody(action: item.action), forKey: .action)
        }
    }
    private struct ActionBody: Encodable {
        var action: Profile.Settings.Action
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: ItemBody.ActionKeys.self)
            try c.encode(action.type, forKey: .type)
            if let text = action.text { try c.encode(text, forKey: .text) }
            if let url = action.url { try c.encode(url, forKey: .url) }
            if let value = action.value { try c.encode(value, forKey: .value) }
            if let t = action.confirmTitle { try c.encode(t, forKey: .confirmTitle) }
            if let m = action.confirmMessage { try c.encode(m, forKey: .confirmMessage) }
        }
    }
}

/// `{loggedOut: true}`.
struct LoggedOutShape: Encodable { var loggedOut = true }

/// `{followState}` (unfollow).
struct FollowStateShape: Encodable { var followState: FollowState }

/// `{unreadCount}`.
struct UnreadShape: Encodable { var unreadCount: Int }

/// `{status}` (health).
struct HealthShape: Encodable { var status: String }

/// `{status, services}` (readiness): each service `up`, `down` or `timeout`.
struct ReadinessShape: Encodable {
    var status: String
    var services: [String: String]
}

/// `{push: {like, follow, comment, tag, post}}`: which notification types are pushed.
struct PreferencesShape: Encodable {
    var push: Notifications.PushPreferences
}

/// A follow request as its target lists it: `{user, createdAt}`.
struct DatedUserShape: Encodable {
    var user: PublicUser
    /// RFC 3339.
    var createdAt: String
}
