import Foundation
import Messages
import Testing
import Wire

@testable import NotificationService

/// The fan-out's messages are spliced from one encoding of the notification; each must be the
/// bytes encoding that recipient's notification would give (the writer sorts members, so `id` and
/// `seq` sit in the middle of the object, and a nested `post.id` must not be taken for them).
struct NotificationPublisherTests {
    @Test func eachMessageIsTheRecipientsOwnEncoding() throws {
        let ids = NotificationIds(secret: Array(repeating: 3, count: 32))
        let template = Notifications.Notification(
            id: "", seq: 0, type: .like, detail: "photo", createdAt: "2026-12-02T07:00:00.000Z", read: false,
            actorId: "a1", post: .init(id: "p1", thumbnailURL: "/media/p1/square320"), followState: nil)
        let recipients: [(key: Int64, seq: Int64)] = [(1, 1), (2, 17), (300, 123_456_789)]
        let messages = NotificationPublisher.messages(template, recipients, ids: ids) { _ in true }
        #expect(messages.count == 3)
        for (message, r) in zip(messages, recipients) {
            var expected = template
            expected.id = ids.id(recipient: r.key, seq: r.seq)
            expected.seq = r.seq
            #expect(message.payload == (try WireJSON.encode(expected)))
            #expect(message.topic == NotificationRouting.topic(recipientKey: r.key))
        }
    }
}

/// A template that carries its actor: the actor's own `id` member is not taken for the
/// recipient's.
struct NotificationPublisherActorTests {
    @Test func aCarriedActorIsKeptAndItsIdLeftAlone() throws {
        let ids = NotificationIds(secret: Array(repeating: 5, count: 32))
        let actor = PublicUser(id: "a1", username: "alice", name: "Alice", bio: "", profilePhotoURL: "https://img.example/a.jpg")
        let template = Notifications.Notification(
            id: "", seq: 0, type: .like, detail: "photo", createdAt: "2026-12-02T07:00:00.000Z", read: false,
            actorId: "a1", post: .init(id: "p1", thumbnailURL: "/media/p1/square320"), followState: nil, actor: actor)
        let recipients: [(key: Int64, seq: Int64)] = [(1, 1), (9, 42)]
        let messages = NotificationPublisher.messages(template, recipients, ids: ids) { _ in true }
        #expect(messages.count == 2)
        for (message, r) in zip(messages, recipients) {
            var expected = template
            expected.id = ids.id(recipient: r.key, seq: r.seq)
            expected.seq = r.seq
            #expect(message.payload == (try WireJSON.encode(expected)))
            #expect(try WireJSON.decode(Notifications.Notification.self, from: message.payload).actor == actor)
        }
    }
}
