import BackendKit
import Messages
import ServiceKit
import Storage
import Wire

/// Changes to a profile's own fields: nil = unchanged; `clear` sets the named optional fields
/// (`phone`, `gender`, `birthDate`, `profilePhotoURL`) to null.
struct ProfileChanges: Sendable {
    var name: String?
    var bio: String?
    var profilePhotoURL: String?
    var phone: String?
    var gender: String?
    var birthDate: String?
    /// A private account or not (nil: unchanged).
    var isPrivate: Bool? = nil
    var clear: Set<String> = []
}

/// Accounts as ProfileService knows them (`identities` through the replica, and `profiles`):
/// every statement on `profiles`. Lookups that miss the replica ask AuthService once.
protocol ProfileStore: Sendable {
    /// How `viewer` may treat `owner`'s content (`Visibility.access`), read from this service's
    /// replica of the follow graph's pairs. - Throws: the engine's error.
    func access(viewer: String, owner: String) async throws -> Access

    /// The account with `id`, or nil when AuthService does not know it either.
    /// - Throws: `ServiceError` 503/504 when AuthService must be asked and cannot answer.
    func user(id: String) async throws -> UserRecord?

    /// Accounts by id (unknown ids left out).
    func users(ids: [String]) async throws -> [String: UserRecord]

    /// Accounts by username, keyed by `Username.lookupKey` (unknown names left out).
    func users(usernames: [String]) async throws -> [String: UserRecord]

    /// The account named `username` (case-insensitive) and how many posts it has, read in one
    /// statement (one snapshot); nil when the replica does not know the name (the caller asks
    /// AuthService then, through `users(usernames:)`).
    func header(username: String) async throws -> (user: UserRecord, postCount: Int)?

    /// Stores the identity (if newer) and the registration's profile fields; idempotent. Each
    /// call publishes the profile's public fields as `profile.user.changed` (NotificationService
    /// shows actors from those).
    func createProfile(_ identity: Identity, name: String?, birthDate: String?, gender: String?) async throws
        -> UserRecord

    /// Applies a new identity (after a rename through AuthService) and the profile changes in
    /// one transaction; emits `profile.user.changed` when the public profile changed.
    /// - Throws: 404 when the account has no profile.
    func update(userId: String, identity: Identity?, _ changes: ProfileChanges) async throws -> UserRecord

    /// Sets the `saveOriginalPosts` setting. - Returns: the account, or nil when unknown.
    func setSaveOriginalPosts(userId: String, _ value: Bool) async throws -> UserRecord?

    /// Makes `userId`'s own upload `mediaId` (its URL `photoURL`) the profile photo, or removes the
    /// photo (both nil); the photo it replaces is due for collection after `releaseDelayMs`. Emits
    /// `profile.user.changed`.
    /// - Throws: 404 for an unknown account or an upload that is not `userId`'s.
    func setPhoto(userId: String, mediaId: String?, photoURL: String?, releaseDelayMs: Int64) async throws -> UserRecord
}

/// `ProfileStore` on a SQL `Database`, either engine.
struct SQLProfileStore: ProfileStore {
    let database: Database
    let replica: IdentityReplica
    /// How long an uploaded photo replaced by a URL edit is kept before the collector looks at it, in ms.
    var mediaReleaseDelayMs: Int64 = 60_000

    /// The identity replica, creating an account's profile row (joined at the time the account
    /// was first seen) in the same transaction as its identity.
    static func replica(database: Database, auth: RPCClient) -> IdentityReplica {
        IdentityReplica(database: database, auth: auth, keepsEmail: true) { id, time, tx in
            try tx.query("INSERT INTO profiles(id, join_date) VALUES (\(id), \(time)) ON CONFLICT DO NOTHING")
        }
    }

    func access(viewer: String, owner: String) async throws -> Access {
        try await database.read { try Visibility.access(viewer: viewer, owner: owner, on: $0) }
    }

    /// Accounts by id from one connection (unknown ids, or names lost to a newer owner, left out).
    static func records(ids: [String], on c: DatabaseConnection) throws -> [String: UserRecord] {
        var found: [String: UserRecord] = [:]
        for id in Set(ids) {
            if let u = try c.queryOne(
                UserRecord.self, "\(UserRecord.select) WHERE i.id = \(id) AND i.username IS NOT NULL")
            {
                found[id] = u
            }
        }
        return found
    }

    func user(id: String) async throws -> UserRecord? {
        try await users(ids: [id])[id]
    }

    func users(ids: [String]) async throws -> [String: UserRecord] {
        let unique = Array(Set(ids))
        if unique.isEmpty { return [:] }
        let found = try await database.read { try Self.records(ids: unique, on: $0) }
        if found.count == unique.count { return found }
        try await replica.refresh(ids: unique.filter { found[$0] == nil }, usernames: [])
        return try await database.read { try Self.records(ids: unique, on: $0) }
    }

    func users(usernames: [String]) async throws -> [String: UserRecord] {
        let names = Array(Set(usernames.compactMap(Username.lookupKey)))
        if names.isEmpty { return [:] }
        let read: @Sendable (DatabaseConnection) throws -> [String: UserRecord] = { c in
            var found: [String: UserRecord] = [:]
            for name in names {
                if let u = try c.queryOne(UserRecord.self, "\(UserRecord.select) WHERE i.username = \(name)") {
                    found[name] = u
                }
            }
            return found
        }
        let found = try await database.read(read)
        if found.count == names.count { return found }
        try await replica.refresh(ids: [], usernames: names.filter { found[$0] == nil })
        return try await database.read(read)
    }

    func header(username: String) async throws -> (user: UserRecord, postCount: Int)? {
        guard let name = Username.lookupKey(username) else { return nil }
        return try await database.read { c -> (user: UserRecord, postCount: Int)? in
            guard
                let row = try c.queryOne(
                    """
                    SELECT u.*, (SELECT COUNT(*) FROM posts WHERE owner_id = u.id) AS post_count
                    FROM (\(UserRecord.select) WHERE i.username = \(name)) u
                    """)
            else { return nil }
            return (try UserRecord(row: row), try row.int("post_count"))
        }
    }

    func createProfile(_ identity: Identity, name: String?, birthDate: String?, gender: String?) async throws
        -> UserRecord
    {
        let replica = self.replica
        return try await database.write { tx in
            try replica.apply(identity, in: tx)
            try tx.query(
                """
                UPDATE profiles SET name = COALESCE(\(name), name), birth_date = COALESCE(\(birthDate), birth_date),
                    gender = COALESCE(\(gender), gender) WHERE id = \(identity.id)
                """)
            guard let user = try Self.records(ids: [identity.id], on: tx.connection)[identity.id] else {
                throw ServiceError.internal("profile vanished")
            }
            // NotificationService keeps the fields an actor is shown with (`ActorProfiles`). Sent on
            // every call: the identity replica may have made the row first (from AuthService's
            // event), so "new" cannot be told here; a retry sends the same fields again.
            try tx.emit(Profile.ProfileChanged(user: user.publicUser))
            return user
        }
    }

    func update(userId: String, identity: Identity?, _ changes: ProfileChanges) async throws -> UserRecord {
        let replica = self.replica
        let delay = mediaReleaseDelayMs
        return try await database.write { tx in
            guard let before = try Self.records(ids: [userId], on: tx.connection)[userId] else {
                throw ServiceError.notFound("user")
            }
            if let identity { try replica.apply(identity, in: tx) }
            if changes.profilePhotoURL != nil || changes.clear.contains("profilePhotoURL") {
                // A photo given as a URL replaces an uploaded one: that upload may be unused now.
                try Self.releasePhoto(userId: userId, delayMs: delay, on: tx.connection)
            }
            // Each column: cleared, set, or left as it is.
            func value(_ key: String, _ new: String?, _ old: String?) -> String? {
                changes.clear.contains(key) ? nil : (new ?? old)
            }
            try tx.query(
                """
                UPDATE profiles SET name = \(changes.name ?? before.name), bio = \(changes.bio ?? before.bio),
                    photo_url = \(value("profilePhotoURL", changes.profilePhotoURL, before.profilePhotoURL)),
                    phone = \(value("phone", changes.phone, before.phone)),
                    gender = \(value("gender", changes.gender, before.gender)),
                    birth_date = \(value("birthDate", changes.birthDate, before.birthDate)),
                    is_private = \(changes.isPrivate ?? before.isPrivate)
                WHERE id = \(userId)
                """)
            guard let after = try Self.records(ids: [userId], on: tx.connection)[userId] else {
                throw ServiceError.notFound("user")
            }
            if after.publicUser != before.publicUser { try tx.emit(Profile.ProfileChanged(user: after.publicUser)) }
            return after
        }
    }

    /// Clears `userId`'s `photo_media_id`, releasing that upload after `delayMs`.
    static func releasePhoto(userId: String, delayMs: Int64, on c: DatabaseConnection) throws {
        let old = try c.queryOne("SELECT photo_media_id FROM profiles WHERE id = \(userId)")?.optionalString(
            "photo_media_id")
        if let old {
            try SQLMediaRecordStore.release(id: old, dueMs: Timestamp.nowMs() + delayMs, on: c)
            try c.query("UPDATE profiles SET photo_media_id = NULL WHERE id = \(userId)")
        }
    }

    func setPhoto(userId: String, mediaId: String?, photoURL: String?, releaseDelayMs: Int64) async throws -> UserRecord {
        try await database.write { tx in
            let c = tx.connection
            guard let before = try Self.records(ids: [userId], on: c)[userId] else { throw ServiceError.notFound("user") }
            if let mediaId, try SQLMediaRecordStore.attach(id: mediaId, ownerId: userId, on: c) == nil {
                throw ServiceError.notFound("media")
            }
            try Self.releasePhoto(userId: userId, delayMs: releaseDelayMs, on: c)
            try c.query(
                "UPDATE profiles SET photo_url = \(photoURL), photo_media_id = \(mediaId) WHERE id = \(userId)")
            guard let after = try Self.records(ids: [userId], on: c)[userId] else { throw ServiceError.notFound("user") }
            if after.publicUser != before.publicUser { try tx.emit(Profile.ProfileChanged(user: after.publicUser)) }
            return after
        }
    }

    func setSaveOriginalPosts(userId: String, _ value: Bool) async throws -> UserRecord? {
        try await database.write { tx in
            try tx.query("UPDATE profiles SET save_original_posts = \(value) WHERE id = \(userId)")
            return try Self.records(ids: [userId], on: tx.connection)[userId]
        }
    }
}
