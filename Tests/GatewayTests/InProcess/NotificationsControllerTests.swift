import Messages
import Testing
import Wire

@testable import Gateway

/// The notifications screen in process: marking read by seq or all, and the list with the
/// actors ProfileService knows.
@Suite struct NotificationsControllerTests {
    let gateway = InProcessGateway()

    @Test func markReadTakesUpToSeqOrAllButNotBoth() async {
        let token = gateway.signIn("alice")
        gateway.notification.on(Notifications.MarkRead.self) { _, _ in .init(unreadCount: 0) }
        let upTo = await gateway.request(.post, "/v1/notifications/read", token: token, json: #"{"upToSeq": 7}"#)
        #expect(upTo.status == 200 && upTo.text == #"{"unreadCount":0}"#)
        let all = await gateway.request(.post, "/v1/notifications/read", token: token, json: #"{"all": true}"#)
        #expect(all.status == 200)
        let sent = gateway.notification.requests(Notifications.MarkRead.self)
        #expect(sent.map(\.upToSeq) == [7, 0] && sent.map(\.all) == [nil, true])
        for (body, field, detail) in [
            ("{}", "upToSeq", "upToSeq: is required"),
            (#"{"upToSeq": 9007199254740992}"#, "upToSeq", "upToSeq: must be an integer from 0 to 9007199254740991"),
            (#"{"all": false}"#, "all", "all: must be true (or give upToSeq instead)"),
            (#"{"all": true, "upToSeq": 3}"#, "all", "all: give either upToSeq or all, not both"),
            (#"{"all": "yes"}"#, "all", "all: must be true or false"),
        ] {
            let r = await gateway.request(.post, "/v1/notifications/read", token: token, json: body)
            #expect(r.status == 400 && r.fields == [field] && r["detail"] == .string(detail), "\(body): \(r.text)")
        }
        #expect(gateway.notification.count(Notifications.MarkRead.self) == 2)
    }

    static func notification(_ seq: Int64, from actor: String) -> Notifications.Notification {
        Notifications.Notification(
            id: "n\(seq)", seq: seq, type: .follow, detail: nil, createdAt: "2026-01-01T00:00:00.000Z", read: false,
            actorId: "u-\(actor)", post: nil, followState: .notFollowing)
    }

    @Test func theListLeavesOutNotificationsWhoseActorIsUnknown() async {
        let token = gateway.signIn("alice")
        gateway.notification.on(Notifications.ListNotifications.self) { _, _ in
            .init(
                items: [Self.notification(2, from: "bob"), Self.notification(1, from: "gone")], nextCursor: nil, unreadCount: 2)
        }
        gateway.profile.on(Profile.UsersByIds.self) { request, _ in
            .init(users: request.ids.filter { $0 == "u-bob" }.map { _ in Fixtures.user("bob") })
        }
        let r = await gateway.request(.get, "/v1/notifications", token: token)
        #expect(r.status == 200 && r["unreadCount"] == .number("2"))
        guard case .array(let items)? = r["items"] else {
            Issue.record("no items: \(r.text)")
            return
        }
        #expect(items.count == 1)
        #expect(gateway.profile.requests(Profile.UsersByIds.self).first?.ids == ["u-bob", "u-gone"])
    }
}
