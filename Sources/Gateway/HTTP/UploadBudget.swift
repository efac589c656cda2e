// UploadBudget: the bytes that bodies larger than the default limit (uploads) may hold at once,
// in all and per peer address; `HTTPServer` keeps one under a mutex, and the loop reserves from
// it once an upload is admitted (see `AdmissionPolicy`).

/// The budget for uploads, in bytes: what uploads being received or handled hold, counted from
/// their declared length (or their limit, when chunked) until their handler returns or their
/// connection ends, so concurrent uploads cannot exhaust the gateway's memory. One peer address
/// may hold only its share, so clients at one address cannot keep every upload out; peers in
/// `sharedPeers` (trusted proxies, which carry many clients) are limited only by the total.
///
/// A value; `HTTPServer` keeps it under a mutex, as uploads end on their handlers' tasks.
struct UploadBudget: Sendable {
    /// Bytes all uploads may hold at once (`maxLargeBodyBytesInFlight`).
    let limit: Int
    /// Bytes the uploads of one peer address may hold at once (`maxLargeBodyBytesPerPeer`).
    let perPeerLimit: Int
    /// Peer addresses not held to `perPeerLimit`.
    let sharedPeers: Set<String>
    /// Bytes reserved now: in all, and per peer address (no entry: none).
    private(set) var total = 0
    private(set) var byPeer: [String: Int] = [:]

    init(limit: Int, perPeerLimit: Int, sharedPeers: Set<String> = []) {
        self.limit = limit
        self.perPeerLimit = perPeerLimit
        self.sharedPeers = sharedPeers
    }

    /// The budget of a server configured so.
    init(_ configuration: HTTPServer.Configuration) {
        self.init(
            limit: configuration.maxLargeBodyBytesInFlight, perPeerLimit: configuration.maxLargeBodyBytesPerPeer,
            sharedPeers: configuration.sharedPeers)
    }

    /// Reserves `bytes` for a body from `peer`: false (and nothing reserved) when the budget, or
    /// the peer's share of it, would be exceeded.
    mutating func reserve(_ bytes: Int, peer: String) -> Bool {
        guard total + bytes <= limit else { return false }
        let held = byPeer[peer, default: 0]
        if !sharedPeers.contains(peer) {
            guard held + bytes <= perPeerLimit else { return false }
        }
        total += bytes
        byPeer[peer] = held + bytes
        return true
    }

    /// Gives back `bytes` that `peer` reserved.
    mutating func release(_ bytes: Int, peer: String) {
        guard bytes > 0 else { return }
        total -= bytes
        let left = byPeer[peer, default: 0] - bytes
        byPeer[peer] = left > 0 ? left : nil
    }
}
