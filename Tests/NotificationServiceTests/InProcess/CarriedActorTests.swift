import Foundation
import Messages
import Testing
import Wire

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

    /// A follow carries no actor: its message gets the actor from the replica that
    /// `profile.user.changed` keeps (created with the profile, renamed later), with the
    /// identity replica's username; an actor the replica never met gets none (the gateway
    /// looks it up).
    @Test func aFollowPublishesTheActorFromTheProfileReplica() async throws {
        let s = try await InProcessService()
        defer { s.stop() }
        let feed = try await ProfileFeed(into: s)
        defer { feed.stop() }
        let ids = try await s.users(["owner", "lee", "stranger"])
        let (lee, stranger) = (ids[1], ids[2])
        try await feed.emit(Profile.ProfileChanged(user: Self.user(lee, name: "Lee")))
        let renamed = PublicUser(id: lee.id, username: lee.username, name: "Leigh", bio: "hi", profilePhotoURL: nil)
        try await feed.emit(Profile.ProfileChanged(user: renamed))
        try await s.follow(lee, "owner", notifyPosts: false)
        try await s.follow(stranger, "owner", notifyPosts: false)

        let toOwner = try await s.published().filter { $0.recipientId == ids[0].id }.map(\.notification)
        #expect(toOwner.map(\.type.wire) == ["follow", "follow"])
        #expect(toOwner.map(\.actor) == [renamed, nil])
        // Storage still keeps ids only.
        #expect(try await s.allNotifications(ids[0]).allSatisfy { $0.actor == nil })
    }
}
