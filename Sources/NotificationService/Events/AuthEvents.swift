import Shared

/// Keeps the users replica up to date from AuthService's events (producer `auth`).
enum AuthEvents {
    static let producer = "auth"

    /// Applies `auth.user.registered` / `auth.user.changed` (if newer) and stores the cursor in
    /// the same transaction; other event types only move the cursor.
    /// - Throws: `SQLiteError` or a decoding error (the subscriber retries, then skips).
    static func deliver(_ event: ReceivedEvent, database: Database) async throws {
        let identity: Identity?
        switch event.header.type {
        case Auth.UserRegistered.type: identity = try event.decode(Auth.UserRegistered.self).identity
        case Auth.IdentityChanged.type: identity = try event.decode(Auth.IdentityChanged.self).identity
        default: identity = nil
        }
        let seq = event.header.seq
        try await database.write { tx in
            if let identity { try UserDirectory.apply(identity, in: tx) }
            try tx.setCursor(seq, for: producer)
        }
    }
}
