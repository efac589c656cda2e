import Shared

/// Finds users in the identity replica, falling back to AuthService (`auth.lookup_users`) when
/// the replica misses (the registration or rename event has not arrived yet) and storing what
/// AuthService answers.
struct UserDirectory: Sendable {
    let database: Database
    let auth: RPCClient

    /// The user with `id`, or nil when AuthService does not know it either.
    /// - Throws: `ServiceError` 503/504 when AuthService must be asked and cannot answer.
    func user(id: String) async throws -> UserRecord? {
        if let u = try await database.read({ try UserRows.byId(id, $0) }) { return u }
        try await refresh(ids: [id], usernames: [])
        return try await database.read { try UserRows.byId(id, $0) }
    }

    /// The user with `id`.
    /// - Throws: `ServiceError` 404 `not_found` when unknown.
    func require(id: String) async throws -> UserRecord {
        guard let u = try await user(id: id) else { throw ServiceError.notFound("user") }
        return u
    }

    /// Users by id (unknown ids left out), asking AuthService once for the replica's misses.
    func users(ids: [String]) async throws -> [String: UserRecord] {
        let unique = Array(Set(ids))
        if unique.isEmpty { return [:] }
        let lookup: @Sendable (SQLiteConnection) throws -> [String: UserRecord] = { conn in
            var found: [String: UserRecord] = [:]
            for id in unique { if let u = try UserRows.byId(id, conn) { found[id] = u } }
            return found
        }
        let found = try await database.read(lookup)
        if found.count == unique.count { return found }
        try await refresh(ids: unique.filter { found[$0] == nil }, usernames: [])
        return try await database.read(lookup)
    }

    /// The user with `username` (compared lower-cased), or nil.
    func user(username: String) async throws -> UserRecord? {
        try await users(usernames: [username])[username.lowercased()]
    }

    /// Users by lower-cased username; unknown names are left out.
    func users(usernames: [String]) async throws -> [String: UserRecord] {
        let names = Array(Set(usernames.map { $0.lowercased() }))
        if names.isEmpty { return [:] }
        let local = try await database.read { conn in
            try names.map { (name: $0, rows: try UserRows.byUsername($0, conn)) }
        }
        var found: [String: UserRecord] = [:]
        var missing: [String] = []
        var ambiguous: [String] = []
        for entry in local {
            switch entry.rows.count {
            case 1: found[entry.name] = entry.rows[0]
            case 0: missing.append(entry.name)
            default:
                missing.append(entry.name)
                ambiguous.append(contentsOf: entry.rows.map(\.id))
            }
        }
        if missing.isEmpty { return found }
        try await refresh(ids: ambiguous, usernames: missing)
        let retry = missing
        let again = try await database.read { conn in
            try retry.map { (name: $0, rows: try UserRows.byUsername($0, conn)) }
        }
        for entry in again where entry.rows.count == 1 { found[entry.name] = entry.rows[0] }
        return found
    }

    /// Asks AuthService for the given ids and usernames and applies the answers to the replica.
    /// Rows that share a username (one of them renamed, its event not yet applied) are
    /// fetched by id, which corrects the stale one, so a username resolves to one user.
    private func refresh(ids: [String], usernames: [String]) async throws {
        let reply = try await auth.call(
            Auth.LookupUsers.self, .init(ids: ids, usernames: usernames), timeoutMs: 2_000)
        if reply.users.isEmpty { return }
        let users = reply.users
        try await database.write { tx in
            for identity in users { try UserRows.apply(identity, tx) }
        }
    }

    /// Applies identities (from events or replies) in one transaction.
    func apply(_ identities: [Identity]) async throws {
        try await database.write { tx in
            for identity in identities { try UserRows.apply(identity, tx) }
        }
    }
}
