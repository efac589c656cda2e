import Messages
import Synchronization
import Wire

/// Validated bearer tokens, kept for a short time (`GATEWAY_TOKEN_CACHE_SECONDS`, default 30 s)
/// so most requests need no call to AuthService. Revoking a session (logout, or AuthService's
/// `auth.session.revoked` event) drops its entries at once and keeps it from being re-added by
/// a validation that was already in flight.
final class TokenCache: Sendable {
    private struct Entry {
        var session: Auth.Validate.Reply
        var storedAtMs: Int64
    }
    private struct State {
        var entries: [String: Entry] = [:]
        /// Recently revoked session ids with the time of revocation (ms).
        var revoked: [String: Int64] = [:]
    }
    private let state = Mutex(State())
    let ttlMs: Int64
    let maxEntries: Int

    init(ttlMs: Int64, maxEntries: Int = 100_000) {
        self.ttlMs = ttlMs
        self.maxEntries = maxEntries
    }

    /// The cached session for a token, if fresh and not expired.
    func get(_ token: String) -> Auth.Validate.Reply? {
        let now = Timestamp.nowMs()
        let nowText = Timestamp.format(ms: now)
        return state.withLock { s in
            guard let e = s.entries[token] else { return nil }
            if now - e.storedAtMs > ttlMs || e.session.expiresAt <= nowText {
                s.entries[token] = nil
                return nil
            }
            return e.session
        }
    }

    /// Stores a validated session (unless it was revoked meanwhile).
    func put(_ token: String, _ session: Auth.Validate.Reply) {
        let now = Timestamp.nowMs()
        state.withLock { s in
            if s.revoked[session.sessionId] != nil { return }
            if s.entries.count >= maxEntries {
                s.entries = s.entries.filter { now - $0.value.storedAtMs <= ttlMs }
                if s.entries.count >= maxEntries { s.entries.removeAll() }
            }
            s.entries[token] = Entry(session: session, storedAtMs: now)
        }
    }

    /// Drops every entry of the given sessions.
    func revoke(sessionIds: [String]) {
        let now = Timestamp.nowMs()
        let ids = Set(sessionIds)
        state.withLock { s in
            s.entries = s.entries.filter { !ids.contains($0.value.session.sessionId) }
            for id in ids { s.revoked[id] = now }
            if s.revoked.count > 10_000 { s.revoked = s.revoked.filter { now - $0.value <= ttlMs * 2 } }
        }
    }
}
