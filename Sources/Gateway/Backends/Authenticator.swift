import Messages
import Wire

/// Checks `Authorization: Bearer <token>` (RFC 6750 §2.1) against AuthService, with a short
/// cache (`TokenCache`), and tells which sessions ended (logout, `auth.session.revoked`).
struct Authenticator: Sendable {
    let auth: Backend
    let tokens: TokenCache

    /// The caller's session.
    /// - Throws: `Problem` 401 (`unauthorized` without a usable header, `invalid_token` for an
    ///   unknown, expired or revoked token), or AuthService's 503/504.
    func authenticate(_ request: HTTPRequest) async throws -> Session {
        guard let header = request.header("authorization") else {
            throw Problem.unauthorized("unauthorized", "an Authorization: Bearer token is required")
        }
        // An empty token (`Bearer` followed by nothing but spaces and tabs) is a header without
        // a token, whatever the whitespace: the same answer as `Bearer` alone.
        let parts = header.split(separator: " ", maxSplits: 1)
        let token = parts.count == 2 ? parts[1].trimmingOptionalWhitespace() : ""
        guard let scheme = parts.first, scheme.lowercased() == "bearer", !token.isEmpty else {
            throw Problem.unauthorized("unauthorized", "the Authorization header must be `Bearer <token>`")
        }
        guard token.utf8.count <= 512 else {
            throw Problem.unauthorized("invalid_token", "the token is not valid")
        }
        if let s = tokens.get(token) {
            return Session(token: token, userId: s.userId, sessionId: s.sessionId, username: s.username)
        }
        do {
            let s = try await auth.call(Auth.Validate.self, .init(token: token))
            tokens.put(token, s)
            return Session(token: token, userId: s.userId, sessionId: s.sessionId, username: s.username)
        } catch let error as ServiceError where error.status == 401 || error.status == 404 {
            throw Problem.unauthorized("invalid_token", "the token is unknown, expired or logged out")
        }
    }
}

/// Who the client is, by address: the TCP peer, or, when the peer is a trusted proxy
/// (`GATEWAY_TRUSTED_PROXIES`), the last address in `X-Forwarded-For` that is not itself a
/// trusted proxy (the rightmost untrusted hop: the leftmost entries are whatever the client
/// claimed).
struct ClientAddress: Sendable {
    /// Trusted proxy addresses (exact IPv4/IPv6 text, as the gateway sees its peers).
    let trustedProxies: Set<String>

    func resolve(_ request: HTTPRequest) -> String {
        guard trustedProxies.contains(request.peerAddress) else { return request.peerAddress }
        let hops = request.headers.values("x-forwarded-for").joined(separator: ",").split(separator: ",").map {
            $0.trimmingOptionalWhitespace()
        }
        for hop in hops.reversed() where !hop.isEmpty && !trustedProxies.contains(hop) { return hop }
        return request.peerAddress
    }
}
