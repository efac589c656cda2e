import Foundation

/// An APNs provider authentication token: a JWT signed with ES256.
///
/// Header `{"alg":"ES256","kid":keyID}`, claims `{"iss":teamID,"iat":issuedAt}`, each
/// base64url-encoded without padding, joined by dots, then the base64url of the 64-byte `r || s`
/// signature of the first two parts (RFC 7515, RFC 7518 §3.4). Sent as `authorization: bearer
/// <jwt>`.
///
/// Source: Apple, "Establishing a token-based connection to APNs" (developer.apple.com).
public struct ProviderToken: Sendable, Equatable {
    /// The compact JWT, `header.claims.signature`.
    public var jwt: String
    /// The `iat` claim: seconds since 1970 (UTC).
    public var issuedAt: Int64

    /// Signs a new token.
    /// - Throws: ``ES256KeyError`` when OpenSSL cannot sign.
    static func make(key: ES256Key, keyID: String, teamID: String, issuedAt: Int64) throws(ES256KeyError)
        -> ProviderToken
    {
        // keyID and teamID are letters and digits (APNsConfiguration.validate): nothing to escape.
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
        let signingInput = header + "." + claims
        let signature = try key.sign(Array(signingInput.utf8))
        return ProviderToken(jwt: signingInput + "." + Base64URL.encode(signature), issuedAt: issuedAt)
    }
}

/// The provider token in use: made once, reused by every request on every connection, and
/// replaced when it gets old or APNs rejects it.
///
/// Apple's rules ("Establishing a token-based connection to APNs"): APNs rejects a token whose
/// `iat` is more than one hour old (403 `ExpiredProviderToken`), and a provider that changes its
/// token more often than every 20 minutes is answered 429 `TooManyProviderTokenUpdates`. So a
/// token is replaced once it is ``maximumAge`` (40 minutes) old, between the two; and on a 403
/// `ExpiredProviderToken` / `InvalidProviderToken` once per rejected token (the requests that
/// were in flight with the same token do not each make a new one).
final class ProviderTokenCache: @unchecked Sendable {
    // @unchecked: `key` and `token` are only used while `lock` is held; the rest is immutable.
    private let key: ES256Key
    private let keyID: String
    private let teamID: String
    private let clock: @Sendable () -> Int64
    private let lock = NSLock()
    private var token: ProviderToken?
    private var made = 0

    /// A token this old (seconds) is replaced before its next use: 40 minutes, after Apple's
    /// 20-minute minimum and before its 60-minute maximum.
    static let maximumAge: Int64 = 40 * 60

    /// - Parameter clock: the time in seconds since 1970 (tests move it).
    init(key: ES256Key, keyID: String, teamID: String, clock: @escaping @Sendable () -> Int64) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
    }

    /// How many tokens have been signed so far.
    var tokensMade: Int { lock.withLock { made } }

    /// The token to send now: the current one, or a new one when it is ``maximumAge`` old.
    /// - Throws: ``ES256KeyError`` when a new one cannot be signed.
    func current() throws(ES256KeyError) -> ProviderToken {
        lock.lock()
        defer { lock.unlock() }
        let now = clock()
        if let token, now - token.issuedAt < Self.maximumAge, now >= token.issuedAt { return token }
        return try renew(now)
    }

    /// APNs rejected `rejected` (403 `ExpiredProviderToken` or `InvalidProviderToken`): replaces
    /// it unless that was done already, and returns the token to send the request again with.
    /// - Throws: ``ES256KeyError`` when a new one cannot be signed.
    func replace(_ rejected: String) throws(ES256KeyError) -> ProviderToken {
        lock.lock()
        defer { lock.unlock() }
        if let token, token.jwt != rejected { return token }
        return try renew(clock())
    }

    private func renew(_ now: Int64) throws(ES256KeyError) -> ProviderToken {
        let fresh = try ProviderToken.make(key: key, keyID: keyID, teamID: teamID, issuedAt: now)
        token = fresh
        made += 1
        return fresh
    }
}
