import Shared

/// A user as the replica knows it.
struct UserRef: Sendable, Equatable {
    var id: String
    var username: String
}

/// The replica of AuthService's identities (`users` table), fed by `auth.user.registered` /
/// `auth.user.changed` events, with a fallback to `auth.lookup_users` on a miss (events may lag
/// behind a freshly registered account).
struct UserDirectory: Sendable {
    let database: Database
    let auth: RPCClient

    /// Applies an identity if its `version` is newer than the stored one. A username another
    /// row still holds (a stale rename) is taken from that row: the newest owner wins.
    static func apply(_ identity: Identity, in tx: Transaction) throws {
        let username = identity.username.lowercased()
        if let current = try tx.connection.queryOne(
            "SELECT version FROM users WHERE id = ?", [identity.id]),
            current.int(0) >= identity.version
        {
            return
        }
        try tx.query("DELETE FROM users WHERE username = ? AND id <> ?", [username, identity.id])
        try tx.query(
            """
            INSERT INTO users(id, username, version) VALUES (?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET username = excluded.username, version = excluded.version
            """, [identity.id, username, identity.version])
    }

    /// The replica's username for `id`, nil on a miss (no AuthService call).
    static func replicaName(_ id: String, on c: SQLiteConnection) throws -> String? {
        try c.queryOne("SELECT username FROM users WHERE id = ?", [id])?.string(0)
    }

    /// The user named `username` and the user with id `id`, from one replica read, each looked
    /// up at AuthService on a miss; nil for one AuthService does not know.
    /// - Throws: `ServiceError` 503/504 when the replica misses and AuthService cannot answer.
    func resolve(username: String, id: String) async throws -> (named: UserRef?, withId: UserRef?) {
        let name = username.lowercased()
        let (named, withId) = try await database.read { c in
            (
                try c.queryOne("SELECT id, username FROM users WHERE username = ?", [name]).map {
                    UserRef(id: $0.string(0), username: $0.string(1))
                },
                try c.queryOne("SELECT id, username FROM users WHERE id = ?", [id]).map {
                    UserRef(id: $0.string(0), username: $0.string(1))
                }
            )
        }
        return (
            try await named.asyncOr { try await byUsername(name) },
            try await withId.asyncOr { try await byId(id) }
        )
    }

    /// The user named `username` (case-insensitive), or nil when AuthService does not know it.
    /// - Throws: `ServiceError` 503/504 when the replica misses and AuthService cannot answer.
    func byUsername(_ username: String) async throws -> UserRef? {
        let name = username.lowercased()
        if let hit = try await database.read({ c in
            try c.queryOne("SELECT id, username FROM users WHERE username = ?", [name]).map {
                UserRef(id: $0.string(0), username: $0.string(1))
            }
        }) {
            return hit
        }
        return try await lookup(Auth.LookupUsers.Request(usernames: [name])).first {
            $0.username == name
        }
    }

    /// The user with `id`, or nil when AuthService does not know it.
    /// - Throws: `ServiceError` 503/504 when the replica misses and AuthService cannot answer.
    func byId(_ id: String) async throws -> UserRef? {
        if let hit = try await database.read({ c in
            try c.queryOne("SELECT id, username FROM users WHERE id = ?", [id]).map {
                UserRef(id: $0.string(0), username: $0.string(1))
            }
        }) {
            return hit
        }
        return try await lookup(Auth.LookupUsers.Request(ids: [id])).first { $0.id == id }
    }

    /// A display name for an event's actor: the replica's username, AuthService's on a miss,
    /// `someone` when neither is available (an event is never dropped for want of a name).
    func displayName(_ id: String) async -> String {
        (try? await byId(id))?.username ?? "someone"
    }

    /// Asks AuthService and stores what it answered in the replica.
    private func lookup(_ request: Auth.LookupUsers.Request) async throws -> [UserRef] {
        let reply = try await auth.call(Auth.LookupUsers.self, request, timeoutMs: 2_000)
        guard !reply.users.isEmpty else { return [] }
        let users = reply.users
        try await database.write { tx in
            for identity in users { try UserDirectory.apply(identity, in: tx) }
        }
        return users.map { UserRef(id: $0.id, username: $0.username.lowercased()) }
    }
}

extension Optional where Wrapped: Sendable {
    /// The value, or the result of `fallback` when nil.
    fileprivate func asyncOr(_ fallback: () async throws -> Wrapped?) async rethrows -> Wrapped? {
        if let self { return self }
        return try await fallback()
    }
}
