import Foundation
import Shared
import Testing

@testable import NotificationService

/// The actor that ProfileService's events carry goes on the live message of the notification it
/// makes (so a gateway shows it without asking ProfileService), never into storage; events from
/// an older producer, without one, make messages without one.
struct CarriedActorTests {
    static func user(_ identity: Identity, name: String) -> PublicUser {
        PublicUser(
            id: identity.id, username: identity.username, name: name, bio: "",
            profilePhotoURL: "https://img.example/\(identity.username).jpg")
    }

    @Test func likesCommentsTagsAndPostsPublishTheActorTheirEventCarried() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let ids = try await s.users(["owner", "liker", "fan"])
        let (owner, liker, fan) = (ids[0], ids[1], ids[2])
        try await s.follow(fan, "owner", notifyPosts: true)
        let likerUser = Self.user(liker, name: "Liker")
        let ownerUser = Self.user(owner, name: "Owner")
        let photo = "https://img.example/p1.jpg"

        try await feed.emit(
            Profile.PostLiked(postId: "p1", ownerId: owner.id, userId: liker.id, thumbnailURL: photo, user: likerUser))
        try await feed.emit(
            Profile.PostCommented(
                postId: "p1", ownerId: owner.id, userId: liker.id, commentId: "c1", text: "nice", thumbnailURL: photo,
                user: likerUser))
        try await feed.emit(
            Profile.PostCreated(
                postId: "p2", ownerId: owner.id, thumbnailURL: photo, taggedUserIds: [liker.id], createdAt: Timestamp.now(),
                owner: ownerUser))
        // An older producer's like (no actor), and one whose actor is somebody else: neither carries one.
        try await feed.emit(Profile.PostLiked(postId: "p3", ownerId: owner.id, userId: liker.id, thumbnailURL: photo))
        try await feed.emit(
            Profile.PostLiked(postId: "p4", ownerId: owner.id, userId: liker.id, thumbnailURL: photo, user: ownerUser))

        let published = try await s.published()
        let toOwner = published.filter { $0.recipientId == owner.id }.map(\.notification)
        #expect(toOwner.map(\.type.wire) == ["follow", "like", "comment", "like", "like"])
        #expect(toOwner.map(\.actor) == [nil, likerUser, likerUser, nil, nil])
        let toLiker = published.filter { $0.recipientId == liker.id }.map(\.notification)
        #expect(toLiker.map(\.type.wire) == ["tag"] && toLiker.map(\.actor) == [ownerUser])
        let toFan = published.filter { $0.recipientId == fan.id }.map(\.notification)
        #expect(toFan.map(\.type.wire) == ["post"] && toFan.map(\.actor) == [ownerUser])

        // Storage keeps ids only: what is read later carries no actor.
        for user in [owner, liker, fan] {
            #expect(try await s.allNotifications(user).allSatisfy { $0.actor == nil })
            #expect(try await s.since(user, after: 0).items.allSatisfy { $0.actor == nil })
        }
    }
}
