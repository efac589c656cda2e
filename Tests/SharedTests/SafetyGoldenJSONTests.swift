import Testing

@testable import Messages
@testable import Wire

/// Pins the wire format of what deleting a comment and the word list added (issue 39, points 5
/// and 7): `profile.delete_comment`, `profile.comment.deleted`, and a 422
/// `objectionable_content` reply naming its fields.
struct SafetyGoldenJSONTests {
    func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try WireJSON.encode(value), as: UTF8.self) }

    @Test func deletingACommentIsPinned() throws {
        #expect(Profile.DeleteComment.type == "profile.delete_comment" && Profile.DeleteComment.isIdempotent)
        #expect(
            try json(Profile.DeleteComment.Request(userId: "u1", postId: "p1", commentId: "c1"))
                == #"{"commentId":"c1","postId":"p1","userId":"u1"}"#)
        #expect(Profile.CommentDeleted.type == "profile.comment.deleted")
        #expect(
            try json(Profile.CommentDeleted(postId: "p1", ownerId: "u2", userId: "u1", commentId: "c1", deletedBy: "u2"))
                == #"{"commentId":"c1","deletedBy":"u2","ownerId":"u2","postId":"p1","userId":"u1"}"#)
    }

    @Test func anObjectionableContentReplyIsPinned() throws {
        let reply = ReplyEnvelope<Empty>(
            id: "c3", type: "profile.update_me", body: nil,
            error: .objectionableContent([WordList.objectionable("name"), WordList.objectionable("bio")]))
        #expect(
            try json(reply)
                == #"{"error":{"code":"objectionable_content","fields":[{"code":"objectionable_content","field":"name","message":"contains a term that is not allowed"},{"code":"objectionable_content","field":"bio","message":"contains a term that is not allowed"}],"message":"name: contains a term that is not allowed; bio: contains a term that is not allowed","status":422},"id":"c3","type":"profile.update_me","v":1}"#
        )
    }
}
