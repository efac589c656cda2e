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

    /// Whether `token` is a device token as stored: lowercase hex, an even number of digits,
    /// 16...200 of them (API.md; APNs tokens are 64 digits today and Apple says they may grow).
    static func isStoredToken(_ token: String) -> Bool {
        let digits = token.utf8
        return (16...200).contains(digits.count) && digits.count % 2 == 0
            && digits.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Registers a device (see `Notifications.RegisterDevice`): the token moves to the caller if
    /// another user holds it (that device and its queued pushes are deleted, the caller gets a
    /// new id); the caller's own token keeps its id and takes the new environment, session and
    /// registration time. Past `maxPerUser` devices the caller's oldest go.
    /// - Throws: 400 `invalid_field` (`token`, `environment`), the engine's error.
    func register(_ r: Notifications.RegisterDevice.Request) async throws -> Notifications.Device {
        var errors: [FieldError] = []
        if !Self.isStoredToken(r.token) {
            errors.append(.init(field: "token", .invalidField, message: "must be 16 to 200 lowercase hex digits, even"))
        }
        if !Self.environments.contains(r.environment) {
            errors.append(.init(field: "environment", .invalidField, message: "must be sandbox or production"))
        }
        guard errors.isEmpty else { throw ServiceError.validation(errors) }
        let now = clock()
        return try await database.write { tx in
            let c = tx.connection
            let user = try Keys.user(r.userId, in: tx)
            if let row = try c.queryOne("SELECT key, id, user_key FROM devices WHERE token = \(r.token)") {
                let key = try row.int64("key")
                if try row.int64("user_key") == user {
                    try tx.query(
                        """
                        UPDATE devices SET environment = \(r.environment), session_id = \(r.sessionId), created_at = \(now)
                            WHERE key = \(key)
                        """
                    )
                    return Self.device(id: try row.string("id"), environment: r.environment, createdAt: now)
                }
                // Another user's: the token moves; nothing queued for them goes to the caller.
                try Self.delete(deviceKey: key, in: tx)
            }
            let id = RandomID.make()
            do {
                try tx.query(
                    """
                    INSERT INTO devices(id, user_key, token, environment, session_id, created_at)
                    VALUES (\(id), \(user), \(r.token), \(r.environment), \(r.sessionId), \(now))
                    """)
            } catch let error as DatabaseError where error.kind == .uniqueViolation {
                // Another replica registered the same token at the same moment: run again, now
                // seeing its row.
                throw WriteConflict(reason: "another replica registered the same device token")
            }
            // SQLite takes OFFSET only after a LIMIT (`SQL.noLimit`).
            let surplus = try c.query(
                "SELECT key FROM devices WHERE user_key = \(user) ORDER BY key DESC \(SQL.noLimit) OFFSET \(Self.maxPerUser)")
            for row in surplus { try Self.delete(deviceKey: try row.int64("key"), in: tx) }
            return Self.device(id: id, environment: r.environment, createdAt: now)
        }
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

    /// Inserts `devices` (no session: `session_id` empty) whose tokens are not registered yet, 500
    /// rows a statement, in `tx` (`Notifications.ImportDevices`; the caller checked the values).
    /// The per-user cap of `register` is not applied: an import is not a client.
    /// - Returns: how many were inserted. - Throws: the engine's error.
    static func importDevices(
        _ devices: [(userKey: Int64, token: String, environment: String)], nowMs: Int64, in tx: Transaction
    ) throws -> Int {
        var created = 0
        var rest = devices[...]
        while !rest.isEmpty {
            let chunk = rest.prefix(500)
            rest = rest.dropFirst(chunk.count)
            let rows = chunk.map { d -> SQL in
                "(\(RandomID.make()), \(d.userKey), \(d.token), \(d.environment), '', \(nowMs))"
            }
            try tx.query(
                """
                INSERT INTO devices(id, user_key, token, environment, session_id, created_at) VALUES
                \(rows.joined(separator: ", "))
                ON CONFLICT(token) DO NOTHING
                """)
            created += tx.connection.changes
        }
        return created
    }

    /// Deletes device `deviceKey` and its queued pushes, in `tx`. - Throws: the engine's error.
    static func delete(deviceKey: Int64, in tx: Transaction) throws {
        try tx.query("DELETE FROM push_queue WHERE device = \(deviceKey)")
        try tx.query("DELETE FROM devices WHERE key = \(deviceKey)")
    }

    /// Deletes the devices `userId` registered with any of `sessionIds`, and their queued pushes
    /// (logout: `auth.session.revoked`), in `tx`.
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
