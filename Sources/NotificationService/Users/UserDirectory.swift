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
