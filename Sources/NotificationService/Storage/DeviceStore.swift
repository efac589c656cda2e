import Foundation
import Messages
import Storage
import Wire

/// Users' APNs devices and push preferences (`devices`, `push_preferences`, see `PushSchema`)
/// on a SQL `Database`, either engine.
struct DeviceStore: Sendable {
    let database: Database
    /// Unix ms now (tests move it).
    let clock: @Sendable () -> Int64

    /// Most devices one user keeps: registering another removes their oldest registration (and
    /// its queued pushes), so one account cannot multiply every notification's pushes without
    /// bound with made-up tokens.
    static let maxPerUser = 20

    /// The API's `environment` values.
    static let environments: Set<String> = ["sandbox", "production"]

    /// Most tokens that may move to one account from other accounts in an hour (each a sign-in on
    /// a phone someone else used): a thief of an installation id cannot cycle through tokens.
    static let maxMovesPerHour = 10

    /// Whether `id` is an installation id as stored: a UUID in lowercase (RFC 9562's text form).
    static func isInstallationId(_ id: String) -> Bool {
        UUID(uuidString: id)?.uuidString.lowercased() == id
    }

    /// Upserts the row of `sessionId` in `device_sessions` (see `PushSchema`), in `tx`: the
    /// lock that orders a registration and a revocation of one session. `user` (a user key, nil
    /// when unknown) is recorded as the session's owner when none is yet (an erasure finds the
    /// account's sessions by it, `AccountErasure`).
    /// - Returns: when the session would have expired if it ended (Unix ms), nil while it is open.
    /// - Throws: the engine's error.
    static func lockSession(_ sessionId: String, user: Int64?, revokedUntil: Int64? = nil, in tx: Transaction) throws
        -> Int64?
    {
        let row = try tx.connection.queryOne(
            """
            INSERT INTO device_sessions(session_id, revoked_until, user_key) VALUES (\(sessionId), \(revokedUntil), \(user))
            ON CONFLICT (session_id) DO UPDATE SET
                revoked_until = COALESCE(excluded.revoked_until, device_sessions.revoked_until),
                user_key = COALESCE(device_sessions.user_key, excluded.user_key)
            RETURNING revoked_until
            """)
        return try row?.optionalInt64("revoked_until")
    }

    /// Whether `token` is a device token as stored: lowercase hex, an even number of digits,
    /// 16...200 of them (API.md; APNs tokens are 64 digits today and Apple says they may grow).
    static func isStoredToken(_ token: String) -> Bool {
        let digits = token.utf8
        return (16...200).contains(digits.count) && digits.count % 2 == 0
            && digits.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Registers a device (see `Notifications.RegisterDevice`), in one transaction that first
    /// locks the session's row (`lockSession`): a session that ended registers nothing. The
    /// token moves to the caller if another user holds it and registered it from the same app
    /// installation (that device and its queued pushes are deleted, the caller gets a new id; at
    /// most `maxMovesPerHour` an hour); the caller's own token keeps its id and takes the new
    /// environment, session, installation and registration time. Past `maxPerUser` devices the
    /// caller's oldest go.
    /// - Throws: 400 `invalid_field` (`token`, `environment`, `installationId`), 401
    ///   `invalid_token` (the session ended), 409 `device_token_in_use` (another account's, from
    ///   another installation), 429 `too_many_attempts` (moves), the engine's error.
    func register(_ r: Notifications.RegisterDevice.Request) async throws -> Notifications.Device {
        var errors: [FieldError] = []
        if !Self.isStoredToken(r.token) {
            errors.append(.init(field: "token", .invalidField, message: "must be 16 to 200 lowercase hex digits, even"))
        }
        if !Self.environments.contains(r.environment) {
            errors.append(.init(field: "environment", .invalidField, message: "must be sandbox or production"))
        }
        if let installation = r.installationId, !Self.isInstallationId(installation) {
            errors.append(.init(field: "installationId", .invalidField, message: "must be a UUID in lowercase"))
        }
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        let now = clock()
        return try await database.write { tx in try Self.register(r, now: now, in: tx) }
    }

    /// `register(_:)`'s transaction, in `tx` (the request checked); `now` in Unix ms.
    /// - Throws: as `register(_:)`.
    static func register(_ r: Notifications.RegisterDevice.Request, now: Int64, in tx: Transaction) throws
        -> Notifications.Device
    {
        let c = tx.connection
        let user = try Keys.user(r.userId, in: tx)
        if try Self.lockSession(r.sessionId, user: user, in: tx) != nil {
            throw ServiceError(.invalidToken, message: "the session has ended", status: 401)
        }
        // A suspended, deleted or erased account registers nothing (its lock: see `AccountStates`).
        try Relations.lockAccounts([user], shared: true, in: tx)
        try AccountStates.requireVisible([user], on: c)
        if let row = try c.queryOne("SELECT key, id, user_key, installation_id FROM devices WHERE token = \(r.token)") {
            let key = try row.int64("key")
            if try row.int64("user_key") == user {
                try tx.query(
                    """
                    UPDATE devices SET environment = \(r.environment), session_id = \(r.sessionId), created_at = \(now),
                        installation_id = COALESCE(\(r.installationId), installation_id)
                        WHERE key = \(key)
                    """
                )
                return Self.device(id: try row.string("id"), environment: r.environment, createdAt: now)
            }
            // Another user's: it moves only from the same installation (a sign-out and a
            // sign-in on one phone), and nothing queued for them goes to the caller.
            guard let installation = r.installationId, try row.optionalString("installation_id") == installation else {
                throw ServiceError(
                    .deviceTokenInUse,
                    message: "this device token is registered to another account by another app installation",
                    status: 409)
            }
            try Self.recordMove(user: user, now: now, in: tx)
            try Self.delete(deviceKey: key, in: tx)
        }
        let id = RandomID.make()
        do {
            try tx.query(
                """
                INSERT INTO devices(id, user_key, token, environment, session_id, created_at, installation_id)
                VALUES (\(id), \(user), \(r.token), \(r.environment), \(r.sessionId), \(now), \(r.installationId))
                """)
        } catch let error as DatabaseError where error.kind == .uniqueViolation {
            // Another replica registered the same token at the same moment: run again, now
            // seeing its row.
            throw WriteConflict(reason: "another replica registered the same device token")
        }
        try Self.trim(user: user, in: tx)
        return Self.device(id: id, environment: r.environment, createdAt: now)
    }

    /// Deletes `user`'s devices past `maxPerUser`, oldest registration first, in `tx`.
    /// - Throws: the engine's error.
    static func trim(user: Int64, in tx: Transaction) throws {
        // SQLite takes OFFSET only after a LIMIT (`SQL.noLimit`).
        let surplus = try tx.connection.query(
            "SELECT key FROM devices WHERE user_key = \(user) ORDER BY key DESC \(SQL.noLimit) OFFSET \(maxPerUser)")
        for row in surplus { try delete(deviceKey: try row.int64("key"), in: tx) }
    }

    /// Records a token moving to `user`, in `tx`, unless they had `maxMovesPerHour` in the hour
    /// before `now` (Unix ms).
    /// - Throws: 429 `too_many_attempts` with the seconds until the oldest move leaves the hour.
    static func recordMove(user: Int64, now: Int64, in tx: Transaction) throws {
        let hourAgo = now - 3_600_000
        try tx.query("DELETE FROM device_moves WHERE user_key = \(user) AND at <= \(hourAgo)")
        let moves = try tx.connection.query(
            "SELECT at FROM device_moves WHERE user_key = \(user) ORDER BY at LIMIT \(maxMovesPerHour)")
        if moves.count >= maxMovesPerHour {
            let oldest = try moves[0].int64("at")
            throw ServiceError(
                .tooManyAttempts, message: "too many device tokens moved to this account in an hour", status: 429,
                retryAfter: Int(max(1, (oldest - hourAgo + 999) / 1000)))
        }
        try tx.query("INSERT INTO device_moves(user_key, at) VALUES (\(user), \(now))")
    }

    static func device(id: String, environment: String, createdAt: Int64) -> Notifications.Device {
        .init(id: id, platform: "ios", environment: environment, createdAt: Timestamp.format(ms: createdAt))
    }

    /// A page of the user's devices, newest first (by device key).
    /// - Throws: 400 `invalid_cursor`, the engine's error.
    func list(userId: String, page: PageRequest) async throws -> Page<Notifications.Device> {
        let before = try database.pageCursors.decode(page.cursor, list: "devices", owner: userId) ?? Int64.max
        let limit = page.clampedLimit
        return try await database.read { c in
            guard let user = try Keys.existingUser(userId, on: c) else { return .init(items: [], nextCursor: nil) }
            let rows = try c.query(
                """
                SELECT key, id, environment, created_at FROM devices WHERE user_key = \(user) AND key < \(before)
                ORDER BY key DESC LIMIT \(limit + 1)
                """)
            let items = try rows.prefix(limit).map {
                Self.device(
                    id: try $0.string("id"), environment: try $0.string("environment"),
                    createdAt: try $0.int64("created_at"))
            }
            let next =
                rows.count > limit
                ? database.pageCursors.encode(list: "devices", owner: userId, key: try rows[limit - 1].int64("key")) : nil
            return .init(items: items, nextCursor: next)
        }
    }

    /// Deletes the user's device `deviceId` and its queued pushes.
    /// - Throws: 404 `not_found` for an unknown id or another user's device; the engine's error.
    func delete(userId: String, deviceId: String) async throws {
        let found = try await database.write { tx -> Bool in
            let c = tx.connection
            guard let user = try Keys.existingUser(userId, on: c),
                let key = try c.scalar("SELECT key FROM devices WHERE id = \(deviceId) AND user_key = \(user)")
            else { return false }
            try Self.delete(deviceKey: key, in: tx)
            return true
        }
        guard found else { throw ServiceError.notFound("device") }
    }

    /// Inserts the devices whose tokens are not registered yet, in `tx`, 500 rows a statement
    /// (`Notifications.ImportDevices`; the caller checked the values). Each belongs to its session
    /// like a registered device: one of a session that ended is left out, and a logout removes the
    /// others. Then each user is held to `maxPerUser` (their oldest go), as `register` does.
    /// - Returns: how many were inserted. - Throws: the engine's error.
    static func importDevices(
        _ devices: [(userKey: Int64, sessionId: String, token: String, environment: String, installationId: String?)],
        nowMs: Int64, in tx: Transaction
    ) throws -> Int {
        var ended = Set<String>()
        var owners: [String: Int64] = [:]
        for d in devices where owners[d.sessionId] == nil { owners[d.sessionId] = d.userKey }
        for session in owners.keys.sorted() where try lockSession(session, user: owners[session], in: tx) != nil {
            ended.insert(session)
        }
        var erased = Set<Int64>()
        for user in Set(devices.map(\.userKey)) where try AccountStates.state(user, on: tx.connection) == .erased {
            erased.insert(user)
        }
        var created = 0
        var rest = devices.filter { !ended.contains($0.sessionId) && !erased.contains($0.userKey) }[...]
        while !rest.isEmpty {
            let chunk = rest.prefix(500)
            rest = rest.dropFirst(chunk.count)
            let rows = chunk.map { d -> SQL in
                "(\(RandomID.make()), \(d.userKey), \(d.token), \(d.environment), \(d.sessionId), \(nowMs), \(d.installationId))"
            }
            try tx.query(
                """
                INSERT INTO devices(id, user_key, token, environment, session_id, created_at, installation_id) VALUES
                \(rows.joined(separator: ", "))
                ON CONFLICT(token) DO NOTHING
                """)
            created += tx.connection.changes
        }
        for user in Set(devices.map(\.userKey)).sorted() { try trim(user: user, in: tx) }
        return created
    }

    /// Deletes device `deviceKey` and its queued pushes, in `tx`. - Throws: the engine's error.
    static func delete(deviceKey: Int64, in tx: Transaction) throws {
        try tx.query("DELETE FROM push_queue WHERE device = \(deviceKey)")
        try tx.query("DELETE FROM devices WHERE key = \(deviceKey)")
    }

    /// Ends `sessionIds` for devices (logout: `auth.session.revoked`), in `tx`: each session's
    /// row is marked revoked until `until` (Unix ms, when it would have expired; locked first, see
    /// `lockSession`), so no device is registered with it any more, and the devices `userId`
    /// registered with it go, with their queued pushes. Rows of sessions that have expired since
    /// are forgotten, 100 at a time.
    /// - Returns: how many devices were deleted. - Throws: the engine's error.
    @discardableResult
    static func revoke(userId: String, sessionIds: [String], until: Int64, now: Int64, in tx: Transaction) throws -> Int {
        let user = try Keys.existingUser(userId, on: tx.connection)
        for session in sessionIds.sorted() { _ = try lockSession(session, user: user, revokedUntil: until, in: tx) }
        try tx.query(
            """
            DELETE FROM device_sessions WHERE session_id IN (SELECT session_id FROM device_sessions
                WHERE revoked_until IS NOT NULL AND revoked_until < \(now) LIMIT 100)
            """)
        return try removeDevices(userId: userId, sessionIds: sessionIds, in: tx)
    }

    /// Deletes the devices `userId` registered with any of `sessionIds`, and their queued pushes,
    /// in `tx`.
    /// - Returns: how many devices were deleted. - Throws: the engine's error.
    @discardableResult
    static func removeDevices(userId: String, sessionIds: [String], in tx: Transaction) throws -> Int {
        guard !sessionIds.isEmpty, let user = try Keys.existingUser(userId, on: tx.connection) else { return 0 }
        var removed = 0
        for session in sessionIds {
            let keys = try tx.query("SELECT key FROM devices WHERE user_key = \(user) AND session_id = \(session)")
            for row in keys {
                try delete(deviceKey: try row.int64("key"), in: tx)
                removed += 1
            }
        }
        return removed
    }

    /// The bit of `type` in `push_preferences.muted`.
    static func muteBit(_ type: NotificationType) -> Int64 { 1 << type.rawValue }

    static func preferences(muted: Int64) -> Notifications.PushPreferences {
        .init(
            like: muted & muteBit(.like) == 0, follow: muted & muteBit(.follow) == 0,
            comment: muted & muteBit(.comment) == 0, tag: muted & muteBit(.tag) == 0, post: muted & muteBit(.post) == 0)
    }

    /// The user's push preferences (all on when never changed). - Throws: the engine's error.
    func preferences(userId: String) async throws -> Notifications.PushPreferences {
        try await database.read { c in
            guard let user = try Keys.existingUser(userId, on: c) else { return .init() }
            return Self.preferences(muted: try c.scalar("SELECT muted FROM push_preferences WHERE user_key = \(user)") ?? 0)
        }
    }

    /// Changes the given preferences (nil: unchanged). - Returns: all of them afterwards.
    /// - Throws: the engine's error.
    func updatePreferences(_ r: Notifications.UpdatePushPreferences.Request) async throws
        -> Notifications.PushPreferences
    {
        let changes: [(NotificationType, Bool?)] = [
            (.like, r.like), (.follow, r.follow), (.comment, r.comment), (.tag, r.tag), (.post, r.post),
        ]
        return try await database.write { tx in
            let user = try Keys.user(r.userId, in: tx)
            try Relations.lockAccounts([user], shared: true, in: tx)
            try AccountStates.requireVisible([user], on: tx.connection)
            var muted =
                try tx.connection.scalar("SELECT muted FROM push_preferences WHERE user_key = \(user)") ?? 0
            for case (let type, let on?) in changes {
                muted = on ? muted & ~Self.muteBit(type) : muted | Self.muteBit(type)
            }
            try tx.query(
                """
                INSERT INTO push_preferences(user_key, muted) VALUES (\(user), \(muted))
                ON CONFLICT(user_key) DO UPDATE SET muted = excluded.muted
                """)
            return Self.preferences(muted: muted)
        }
    }
}
