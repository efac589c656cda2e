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
