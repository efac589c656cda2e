import Testing

@testable import Shared

/// Pins the wire format: these bytes are the contract between builds of different age.
struct GoldenJSONTests {
    @Test func requestEnvelope() throws {
        let envelope = RequestEnvelope(
            id: "c0ffee", type: Auth.Login.type, deadline: 1_764_439_490_123, trace: "t1",
            body: Auth.Login.Request(login: "alice", password: "pw"))
        let json = String(decoding: try WireJSON.encode(envelope), as: UTF8.self)
        #expect(
            json
                == #"{"body":{"login":"alice","password":"pw"},"deadline":1764439490123,"id":"c0ffee","trace":"t1","type":"auth.login","v":1}"#
        )
    }

    @Test func replyWithBodyAndReplyWithError() throws {
        let ok = ReplyEnvelope(
            id: "c1", type: "graph.unfollow", body: Graph.Unfollow.Reply(followState: .notFollowing), error: nil)
        #expect(
            String(decoding: try WireJSON.encode(ok), as: UTF8.self)
                == #"{"body":{"followState":"not_following"},"id":"c1","type":"graph.unfollow","v":1}"#)
        let failed = ReplyEnvelope<Empty>(
            id: "c2", type: "auth.register", body: nil,
            error: .validation([FieldError(field: "email", code: "invalid_email", message: "not an email")]))
        #expect(
            String(decoding: try WireJSON.encode(failed), as: UTF8.self)
                == #"{"error":{"code":"invalid_email","fields":[{"code":"invalid_email","field":"email","message":"not an email"}],"message":"email: not an email","status":400},"id":"c2","type":"auth.register","v":1}"#
        )
    }

    @Test func eventEnvelopeAndOutboxAgree() throws {
        let body = Graph.FollowChanged(followerId: "u1", followeeId: "u2", following: true, notifyPosts: false)
        let typed = EventEnvelope(
            producer: "notification", seq: 7, type: Graph.FollowChanged.type, time: "2026-11-29T18:04:50.123Z", body: body)
        let expected =
            #"{"body":{"followeeId":"u2","followerId":"u1","following":true,"notifyPosts":false},"producer":"notification","seq":7,"time":"2026-11-29T18:04:50.123Z","type":"graph.follow.changed","v":1}"#
        #expect(String(decoding: try WireJSON.encode(typed), as: UTF8.self) == expected)
        let bodyJSON = String(decoding: try WireJSON.encode(body), as: UTF8.self)
        let built = Outbox.envelope(
            producer: "notification", seq: 7, type: Graph.FollowChanged.type, time: "2026-11-29T18:04:50.123Z", body: bodyJSON)
        #expect(String(decoding: built, as: UTF8.self) == expected)
    }

    @Test func olderReaderIgnoresNewFields() throws {
        let newer =
            #"{"body":{"login":"a","password":"p","addedLater":true},"deadline":1,"id":"x","trace":"t","type":"auth.login","v":1,"priority":3}"#
        let decoded = try WireJSON.decode(RequestEnvelope<Auth.Login.Request>.self, from: Array(newer.utf8))
        #expect(decoded.body.login == "a")
    }

    @Test func timestampsAreRFC3339WithMilliseconds() {
        #expect(Timestamp.format(ms: 1_764_439_490_123) == "2025-11-29T18:04:50.123Z")
        #expect(Timestamp.format(ms: 0) == "1970-01-01T00:00:00.000Z")
    }
}
