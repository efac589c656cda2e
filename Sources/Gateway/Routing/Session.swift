/// A bearer token's session.
struct Session: Sendable {
    var token: String
    var userId: String
    var sessionId: String
    var username: String
}
