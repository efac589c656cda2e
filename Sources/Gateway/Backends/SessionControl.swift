/// Ends sessions in the gateway: their cached tokens and their open streams.
struct SessionControl: Sendable {
    let tokens: TokenCache
    let hub: StreamHub

    func revoke(_ sessionIds: [String]) {
        tokens.revoke(sessionIds: sessionIds)
        hub.close(sessionIds: sessionIds)
    }
}
