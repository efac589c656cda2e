import Testing

@testable import Messages
@testable import Wire

/// Pins the wire format of reports and moderation (API.md "Account lifecycle and moderation"):
/// the requests the gateway sends ProfileService, the event NotificationService applies, and
/// `auth.validate`'s `moderator`, which an older AuthService leaves out (read as false).
struct ModerationGoldenJSONTests {
    func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }

    @Test func theModeratorRoleIsAnOptionalMemberOfValidate() throws {
        #expect(
            try json(Auth.Validate.Reply(userId: "u1", sessionId: "s1", username: "alice", expiresAt: "e", moderator: true))
                == #"{"expiresAt":"e","moderator":true,"sessionId":"s1","userId":"u1","username":"alice"}"#)
        let older = try WireJSON.decode(
            Auth.Validate.Reply.self,
            from: Array(#"{"expiresAt":"e","sessionId":"s1","userId":"u1","username":"alice"}"#.utf8))
        #expect(!older.moderator && older.username == "alice")
    }

    @Test func reportMessages() throws {
        #expect(
            try json(
                Profile.CreateReport.Request(reporterId: "u1", targetType: "post", targetId: "p1", reason: "spam", comment: nil))
                == #"{"reason":"spam","reporterId":"u1","targetId":"p1","targetType":"post"}"#)
        #expect(
            try json(Profile.ResolveReport.Request(reportId: "r1", moderatorId: "m1", action: "dismiss", note: "ok"))
                == #"{"action":"dismiss","moderatorId":"m1","note":"ok","reportId":"r1"}"#)
        #expect(
            try json(Profile.SetSuspension.Request(moderatorId: "m1", username: "alice", suspended: true))
                == #"{"moderatorId":"m1","suspended":true,"username":"alice"}"#)
        #expect(
            try json(Profile.ReportResolved(reportId: "r1", reporterId: "u1", targetType: "post", action: "remove_content"))
                == #"{"action":"remove_content","reportId":"r1","reporterId":"u1","targetType":"post"}"#)
        #expect(
            try json(Profile.ReportStats.Reply(open: 2, oldestOpenAgeSeconds: 1.5))
                == #"{"oldestOpenAgeSeconds":1.5,"open":2}"#)
        let report = Profile.Report(
            id: "r1",
            target: .init(
                type: "comment", id: "c1", snapshot: .init(ownerId: "u2", username: "bob", postId: "p1", text: "<b>hi</b>")),
            reason: "hate", comment: nil, reporter: nil, reportsOnTarget: 1, status: "resolved",
            resolution: .init(action: "dismiss", note: nil, at: "a"), createdAt: "c")
        let wire = try json(report)
        #expect(
            wire
                == #"{"createdAt":"c","id":"r1","reason":"hate","reportsOnTarget":1,"resolution":{"action":"dismiss","at":"a"},"status":"resolved","target":{"id":"c1","snapshot":{"ownerId":"u2","postId":"p1","text":"<b>hi</b>","username":"bob"},"type":"comment"}}"#
        )
        #expect(try WireJSON.decode(Profile.Report.self, from: Array(wire.utf8)) == report)
        // The API's shape (the gateway's writer): every member, null where there is none.
        let api = String(decoding: try JSONWriter.encode(report), as: UTF8.self)
        #expect(api.contains(#""comment":null"#) && api.contains(#""reporter":null"#) && api.contains(#""note":null"#))
        #expect(api.contains(#""caption":null"#) && api.contains(#""bio":null"#))
    }
}
