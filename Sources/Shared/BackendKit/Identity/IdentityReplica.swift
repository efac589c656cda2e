import Messages
import ServiceKit
import Storage
import Wire

/// A service's replica of AuthService's identities (table `identities`), the one in every
/// service that needs usernames: kept up to date from `auth.user.registered`,
/// `auth.users.imported` and `auth.user.changed` events (`subscribe(_:)`), with a fallback to
/// `auth.lookup_users` when it misses (an event may lag behind a fresh registration or rename).
///
/// Rename rule: a newer version of an identity replaces the older; when an identity takes a
/// username that another row still holds, that row's own rename has not arrived yet (AuthService
/// keeps usernames unique), so it loses the name (NULL) and counts as a miss until its event or
/// a lookup brings its current name. A username therefore always resolves to at most one account.
public struct IdentityReplica: Sendable {
    /// Creates `identities` (`IdentityStore.migrations`).
    public static let migrations = IdentityStore.migrations

    public let database: Database
    public let auth: RPCClient
    /// Whether emails are stored (ProfileService shows them to their owner; NotificationService
    /// does not need them and keeps none).
    public let keepsEmail: Bool
    /// Run in the same transaction when an account first enters the replica (its id and the
    /// time it was seen, RFC 3339): ProfileService creates the account's profile there.
    let onInsert: (@Sendable (_ id: String, _ time: String, Transaction) throws -> Void)?

    public init(
        database: Database, auth: RPCClient, keepsEmail: Bool,
        onInsert: (@Sendable (_ id: String, _ time: String, Transaction) throws -> Void)? = nil
    ) {
        self.database = database
        self.auth = auth
        self.keepsEmail = keepsEmail
        self.onInsert = onInsert
    }

    /// Registers the replica's handlers on a subscriber to AuthService's events.
    public func subscribe(_ subscriber: EventSubscriber) {
        subscriber.on(Auth.UserRegistered.self) { event, tx in
            try apply(event.body.identity, time: event.header.time, in: tx)
            return .applied
        }
        subscriber.on(Auth.IdentityChanged.self) { event, tx in
            try apply(event.body.identity, time: event.header.time, in: tx)
            return .applied
        }
        subscriber.on(Auth.UsersImported.self) { event, tx in
            try apply(imported: event.body.identities, time: event.header.time, in: tx)
            return .applied
        }
    }

    /// Applies the identities of one `auth.users.imported` event in the caller's transaction,
    /// with the same outcome as `apply(_:time:in:)` for each in turn (`onInsert` for each new
    /// one). New accounts, the import's usual case, take one INSERT each; only an identity that
    /// meets an existing row (a lookup brought it first, or a stale row holds its username)
    /// goes through the rename rule of `apply`.
    /// - Returns: how many identities changed the replica.
    /// - Throws: `DatabaseError`, or what `onInsert` throws.
    @discardableResult
    public func apply(imported identities: [Identity], time: String = Timestamp.now(), in tx: Transaction) throws -> Int {
        var changed = 0
        for identity in identities {
            // Nothing on any uniqueness conflict, id or username: those go the long way.
            if try IdentityStore.insertIfNew(
                id: identity.id, username: identity.username.lowercased(), email: keepsEmail ? identity.email : nil,
                version: identity.version, in: tx)
            {
                if let onInsert { try onInsert(identity.id, time, tx) }
                changed += 1
            } else if try apply(identity, time: time, in: tx) {
                changed += 1
            }
        }
        return changed
    }

    /// Applies an identity if it is newer than the replica's row (or new), by the rename rule.
    /// - Parameter time: when it was seen (RFC 3339), for `onInsert`.
    /// - Returns: whether the replica changed.
    /// - Throws: `DatabaseError`, or what `onInsert` throws.
    @discardableResult
    public func apply(_ identity: Identity, time: String = Timestamp.now(), in tx: Transaction) throws -> Bool {
        let current = try IdentityStore.stored(id: identity.id, in: tx)
        // A row that lost its name takes the same version again (its name is what it lacks).
        if let current, current.version > identity.version || (current.version == identity.version && current.named) {
            return false
        }
        try IdentityStore.store(
            id: identity.id, username: identity.username.lowercased(), email: keepsEmail ? identity.email : nil,
            version: identity.version, in: tx)
        if current == nil, let onInsert { try onInsert(identity.id, time, tx) }
        return true
    }

    /// The replica's identity for `id`, nil on a miss. - Throws: `DatabaseError`, `RowError`.
    public static func identity(id: String, on c: DatabaseConnection) throws -> ReplicatedIdentity? {
        try IdentityStore.identity(id: id, on: c)
    }

    /// The replica's identity named `username` (see `Username.lookupKey`), nil on a miss.
    /// - Throws: `DatabaseError`, `RowError`.
    public static func identity(username: String, on c: DatabaseConnection) throws -> ReplicatedIdentity? {
        guard let key = Username.lookupKey(username) else { return nil }
        return try IdentityStore.identity(lookupKey: key, on: c)
    }

    /// The identity with `id`, asking AuthService on a miss; nil when it does not know it either.
    /// - Throws: `ServiceError` 503/504 when AuthService must be asked and cannot answer.
    public func identity(id: String) async throws -> ReplicatedIdentity? {
        try await identities(ids: [id])[id]
    }

    /// Identities by id (unknown ids left out), asking AuthService about the misses (one
    /// `auth.lookup_users` per `lookupBatch` of them): the batch lookup of a bulk import.
    /// - Throws: `ServiceError` 503/504 when AuthService must be asked and cannot answer.
    public func identities(ids: [String]) async throws -> [String: ReplicatedIdentity] {
        let unique = Array(Set(ids))
        if unique.isEmpty { return [:] }
        let read: @Sendable (DatabaseConnection) throws -> [String: ReplicatedIdentity] = { c in
            var found: [String: ReplicatedIdentity] = [:]
            for id in unique { if let i = try Self.identity(id: id, on: c) { found[id] = i } }
            return found
        }
        let found = try await database.read(read)
        if found.count == unique.count { return found }
        try await refresh(ids: unique.filter { found[$0] == nil }, usernames: [])
        return try await database.read(read)
    }

    /// The identity named `username` (case-insensitive), asking AuthService on a miss.
    /// - Throws: `ServiceError` 503/504 when AuthService must be asked and cannot answer.
    public func identity(username: String) async throws -> ReplicatedIdentity? {
        guard let key = Username.lookupKey(username) else { return nil }
        return try await identities(usernames: [key])[key]
    }

    /// Identities by username, keyed by `Username.lookupKey` (unknown names, and names no
    /// account can have, left out), asking AuthService once for the misses.
    /// - Throws: `ServiceError` 503/504 when AuthService must be asked and cannot answer.
    public func identities(usernames: [String]) async throws -> [String: ReplicatedIdentity] {
        let names = Array(Set(usernames.compactMap(Username.lookupKey)))
        if names.isEmpty { return [:] }
        let read: @Sendable (DatabaseConnection) throws -> [String: ReplicatedIdentity] = { c in
            var found: [String: ReplicatedIdentity] = [:]
            for name in names { if let i = try Self.identity(username: name, on: c) { found[name] = i } }
            return found
        }
        let found = try await database.read(read)
        if found.count == names.count { return found }
        try await refresh(ids: [], usernames: names.filter { found[$0] == nil })
        return try await database.read(read)
    }

    /// Most ids (and, separately, usernames) AuthService looks up per `auth.lookup_users`.
    public static let lookupBatch = 1_000

    /// Asks AuthService for the given ids and usernames (`lookupBatch` of each per request, the
    /// requests in turn) and applies what it answers, in one transaction.
    /// - Throws: `ServiceError` 503/504 when AuthService cannot answer, `DatabaseError`.
    public func refresh(ids: [String], usernames: [String]) async throws {
        var users: [Identity] = []
        var (idsLeft, namesLeft) = (ids[...], usernames[...])
        while !idsLeft.isEmpty || !namesLeft.isEmpty {
            let request = Auth.LookupUsers.Request(
                ids: Array(idsLeft.prefix(Self.lookupBatch)), usernames: Array(namesLeft.prefix(Self.lookupBatch)))
            idsLeft = idsLeft.dropFirst(Self.lookupBatch)
            namesLeft = namesLeft.dropFirst(Self.lookupBatch)
            users += try await auth.call(Auth.LookupUsers.self, request, timeoutMs: 2_000).users
        }
        if users.isEmpty { return }
        let found = users
        try await database.write { tx in
            for identity in found { try apply(identity, in: tx) }
        }
    }
}
