import Messages
import Wire

/// Checks `Authorization: Bearer <token>` (RFC 6750 §2.1) against AuthService, with a short
/// cache (`TokenCache`), and tells which sessions ended (logout, `auth.session.revoked`).
struct Authenticator: Sendable {
    let auth: any ServiceBackend
    let tokens: TokenCache

    /// The caller's session, from a request's (or an upload's) headers.
    /// - Throws: `Problem` 401 (`unauthorized` without a usable header, `invalid_token` for an
    ///   unknown, expired or revoked token), or AuthService's 503/504.
    func authenticate(_ headers: HTTPHeaders) async throws -> Session {
        guard let header = headers["authorization"] else {
            throw Problem.unauthorized(.unauthorized, "an Authorization: Bearer token is required")
        }
        // An empty token (`Bearer` followed by nothing but spaces and tabs) is a header without
        // a token, whatever the whitespace: the same answer as `Bearer` alone.
        let parts = header.split(separator: " ", maxSplits: 1)
        let token = parts.count == 2 ? parts[1].trimmingOptionalWhitespace() : ""
        guard let scheme = parts.first, scheme.lowercased() == "bearer", !token.isEmpty else {
            throw Problem.unauthorized(.unauthorized, "the Authorization header must be `Bearer <token>`")
        }
        guard token.utf8.count <= 512 else {
            throw Problem.unauthorized(.invalidToken, "the token is not valid")
        }
        if let s = tokens.get(token) {
            return Session(token: token, userId: s.userId, sessionId: s.sessionId, username: s.username)
        }
        do {
            let s = try await auth.call(Auth.Validate.self, .init(token: token))
            tokens.put(token, s)
            return Session(token: token, userId: s.userId, sessionId: s.sessionId, username: s.username)
        } catch let error as ServiceError where error.status == 401 || error.status == 404 {
            throw Problem.unauthorized(.invalidToken, "the token is unknown, expired or logged out")
        }
    }
}
