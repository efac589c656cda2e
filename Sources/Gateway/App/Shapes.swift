import Foundation
import Shared

/// The API's JSON shapes (../shared/API.md "Shapes"), built from the services' messages with
/// every optional member present as `null`.
enum Shapes {
    /// `PublicUser`: `{id, username, name, bio, profilePhotoURL}`.
    static func publicUser(_ u: PublicUser) -> [String: Any] {
        [
            "id": u.id, "username": u.username, "name": u.name, "bio": u.bio,
            "profilePhotoURL": JSONOut.orNull(u.profilePhotoURL),
        ]
    }

    /// `Me`: PublicUser plus `{email, phone, gender, birthDate, joinDate}`.
    static func me(_ m: Me) -> [String: Any] {
        [
            "id": m.id, "username": m.username, "name": m.name, "bio": m.bio,
            "profilePhotoURL": JSONOut.orNull(m.profilePhotoURL),
            "email": m.email, "phone": JSONOut.orNull(m.phone), "gender": JSONOut.orNull(m.gender),
            "birthDate": JSONOut.orNull(m.birthDate), "joinDate": m.joinDate,
        ]
    }

    /// `Post`.
    static func post(_ p: Profile.Post) -> [String: Any] {
        [
            "id": p.id, "owner": publicUser(p.owner), "postType": p.postType, "mediaURL": p.mediaURL,
            "thumbnailURL": p.thumbnailURL, "caption": p.caption,
            "taggedUsers": p.taggedUsers.map(publicUser),
            "likeCount": p.likeCount, "commentCount": p.commentCount, "likedByMe": p.likedByMe,
            "createdAt": p.createdAt,
        ]
    }

    /// `Comment`.
    static func comment(_ c: Profile.Comment) -> [String: Any] {
        [
            "id": c.id, "postId": c.postId, "author": publicUser(c.author), "text": c.text,
            "createdAt": c.createdAt,
        ]
    }

    /// A list entry `{user: PublicUser, followState}`.
    static func userEntry(_ u: PublicUser, _ state: FollowState) -> [String: Any] {
        ["user": publicUser(u), "followState": state.rawValue]
    }

    /// `Notification`: the stored one with its actor resolved to a PublicUser.
    static func notification(_ n: Graph.Notification, actor: PublicUser) -> [String: Any] {
        [
            "id": n.id, "seq": Int(n.seq), "type": n.type, "text": n.text, "createdAt": n.createdAt,
            "read": n.read,
            "actor": publicUser(actor),
            "post": n.post.map { ["id": $0.id, "thumbnailURL": $0.thumbnailURL] as [String: Any] }
                ?? NSNull(),
            "followState": JSONOut.orNull(n.followState?.rawValue),
        ]
    }

    /// A page `{items, nextCursor}` (plus extra members).
    static func page(_ items: [Any], nextCursor: String?, extra: [String: Any] = [:]) -> [String: Any] {
        var out: [String: Any] = ["items": items, "nextCursor": JSONOut.orNull(nextCursor)]
        for (k, v) in extra { out[k] = v }
        return out
    }

    /// One Server-Sent Events message: `id: <seq>`, `event: notification`, `data: <json>`.
    static func sseEvent(_ n: Graph.Notification, actor: PublicUser) -> [UInt8] {
        var bytes = Array("id: \(n.seq)\nevent: notification\ndata: ".utf8)
        bytes += JSONOut.bytes(notification(n, actor: actor))
        bytes += Array("\n\n".utf8)
        return bytes
    }

    /// The follow state the caller has toward `userId` when a batch reply left it out.
    static func fallbackState(viewer: String, userId: String) -> FollowState {
        viewer == userId ? .self : .notFollowing
    }
}
