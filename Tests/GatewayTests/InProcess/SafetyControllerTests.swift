import Messages
import Testing
import Wire

@testable import Gateway

/// Deleting a comment and the word list's answers at the gateway, in process: the route passes
/// the caller, post and comment to ProfileService and answers 204 (its 403 and 404 as problem
/// details); a registration reports the word list's 422 `objectionable_content` once every field
/// is otherwise valid, naming the fields both owners refused.
@Suite struct SafetyControllerTests {
    let gateway = InProcessGateway()

    @Test func deletingACommentAsksProfileServiceAndAnswers204() async {
        let token = gateway.signIn("alice")
        gateway.profile.on(Profile.DeleteComment.self) { request, _ in
            guard request.commentId == "c1" else { throw ServiceError.notFound("comment") }
            guard request.userId == Fixtures.identity("alice").id else { throw ServiceError.forbidden("not yours") }
            return Empty()
        }
        let ok = await gateway.request(.delete, "/v1/posts/p1/comments/c1", token: token)
        #expect(ok.status == 204 && ok.text.isEmpty)
        let sent = gateway.profile.requests(Profile.DeleteComment.self).first
        #expect(sent?.postId == "p1" && sent?.commentId == "c1" && sent?.userId == Fixtures.identity("alice").id)
        let missing = await gateway.request(.delete, "/v1/posts/p1/comments/c2", token: token)
        #expect(missing.status == 404 && missing.code == "not_found")
        let bob = gateway.signIn("bob")
        let forbidden = await gateway.request(.delete, "/v1/posts/p1/comments/c1", token: bob)
        #expect(forbidden.status == 403 && forbidden.code == "forbidden")
        #expect(await gateway.request(.delete, "/v1/posts/p1/comments/c1").status == 401)
    }

    @Test func aRegistrationGetsTheWordListsAnswerOnceItIsOtherwiseValid() async {
        gateway.auth.on(Auth.CheckIdentityFields.self) { request, _ in
            if request.password == "short" {
                throw ServiceError.validation([FieldError(field: "password", .weakPassword, message: "at least 8")])
            }
            if request.username == "badword" { throw ServiceError.objectionableContent([WordList.objectionable("username")]) }
            return Empty()
        }
        gateway.profile.on(Profile.CheckProfileFields.self) { request, _ in
            if request.gender == "robot" {
                throw ServiceError.validation([FieldError(field: "gender", .invalidGender, message: "not a gender")])
            }
            if request.name == "badword" { throw ServiceError.objectionableContent([WordList.objectionable("name")]) }
            return Empty()
        }
        func register(_ members: String) async -> TestResponse {
            await gateway.request(.post, "/v1/auth/register", json: #"{"email": "a@example.com", \#(members)}"#)
        }
        // Both owners refuse: one 422 naming both fields.
        let both = await register(#""username": "badword", "password": "long enough", "name": "badword""#)
        #expect(both.status == 422 && both.code == "objectionable_content")
        #expect(both.fields == ["username", "name"] && both.fieldCodes == ["objectionable_content", "objectionable_content"])
        #expect(both["type"] == .string("https://docs.insta.example/problems/objectionable-content"))
        let one = await register(#""username": "fine", "password": "long enough", "name": "badword""#)
        #expect(one.status == 422 && one.fields == ["name"])
        // A format error anywhere comes first, alone.
        let weak = await register(#""username": "badword", "password": "short", "name": "badword""#)
        #expect(weak.status == 400 && weak.fields == ["password"])
        let gender = await register(#""username": "badword", "password": "long enough", "gender": "robot""#)
        #expect(gender.status == 400 && gender.fields == ["gender"])
        let shape = await gateway.request(
            .post, "/v1/auth/register", json: #"{"username": "badword", "password": "long enough", "name": "badword"}"#)
        #expect(shape.status == 400 && shape.fields == ["email"])
        #expect(gateway.auth.count(Auth.Register.self) == 0)
    }
}
