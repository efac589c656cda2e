import Messages
import Storage
import Wire

/// A keyed write about to be made (draft-ietf-httpapi-idempotency-key-header-07): who sent it,
/// the key, and the fingerprint of what it asks.
struct IdempotencyClaim: Sendable, Equatable {
    /// The caller; keys are scoped to it.
    var userId: String
    /// The `Idempotency-Key` (1–255 printable ASCII).
    var key: String
    /// The request's fingerprint (the draft's "Idempotency Fingerprint"): 64 lowercase hex digits,
    /// `RequestFingerprint`.
    var fingerprint: String
    /// When the request arrived, ms since 1970: its record expires `IdempotencyKey.retentionMs`
    /// later.
    var nowMs: Int64

    /// Records `reply` as this request's result on `c`, inside the transaction of the write it
    /// answers for (`SQLIdempotencyStore.save(_:reply:on:)`).
    /// - Throws: 409 `idempotency_key_in_use` when another request with the key committed first.
    func save<Reply: Encodable>(_ reply: Reply, on c: DatabaseConnection) throws {
        try SQLIdempotencyStore.save(self, reply: try Self.text(reply), on: c)
    }

    /// `reply` as stored: its wire JSON.
    static func text<Reply: Encodable>(_ reply: Reply) throws -> String {
        String(decoding: try WireJSON.encode(reply), as: UTF8.self)
    }
}

/// One `idempotency_keys` row: the first result of a user's key.
struct IdempotencyRecord: Sendable, Equatable, RowDecodable {
    /// The fingerprint of the request that made it.
    var fingerprint: String
    /// Its reply body's wire JSON.
    var reply: String
    /// When it was made, ms since 1970.
    var createdMs: Int64

    init(fingerprint: String, reply: String, createdMs: Int64) {
        self.fingerprint = fingerprint
        self.reply = reply
        self.createdMs = createdMs
    }

    init(row: Row) throws {
        fingerprint = try row.string("fingerprint")
        reply = try row.string("reply")
        createdMs = try row.int64("created_ms")
    }
}

/// Keyed writes' first results (`idempotency_keys`): every statement on that table.
///
/// A result is written in the transaction of the write it stands for, so a retry after a crash
/// between the commit and the reply finds it; a record older than `IdempotencyKey.retentionMs`
/// counts as absent (and a new request with its key replaces it) until `purge` deletes it.
protocol IdempotencyStore: Sendable {
    /// `userId`'s live record of `key` at `nowMs` (ms since 1970), or nil.
    func record(userId: String, key: String, nowMs: Int64) async throws -> IdempotencyRecord?

    /// Records `claim`'s reply (its wire JSON) in a transaction of its own: for a write whose
    /// effect is already idempotent (an upload: content-addressed), recorded once it is complete.
    /// - Throws: 409 `idempotency_key_in_use` when another request with the key committed first.
    func save(_ claim: IdempotencyClaim, reply: String) async throws

    /// Deletes at most `limit` records made at or before `cutoffMs` (ms since 1970), oldest
    /// first. - Returns: how many it deleted.
    func purge(before cutoffMs: Int64, limit: Int) async throws -> Int
}

/// `IdempotencyStore` on a SQL `Database`, either engine.
struct SQLIdempotencyStore: IdempotencyStore {
    let database: Database

    /// Inserts `claim`'s record on `c`, replacing an expired one.
    ///
    /// On PostgreSQL a concurrent transaction inserting the same key waits on the primary key
    /// until this one ends, then finds the live row and changes nothing: the one that committed
    /// first keeps the key, so the write is never applied twice whichever replica ran it.
    /// - Throws: 409 `idempotency_key_in_use` when a live record of the key exists (rolling back
    ///   the write it was made in).
    static func save(_ claim: IdempotencyClaim, reply: String, on c: DatabaseConnection) throws {
        try c.query(
            """
            INSERT INTO idempotency_keys(user_id, idempotency_key, fingerprint, reply, created_ms)
                VALUES (\(claim.userId), \(claim.key), \(claim.fingerprint), \(reply), \(claim.nowMs))
            ON CONFLICT(user_id, idempotency_key) DO UPDATE SET fingerprint = excluded.fingerprint,
                reply = excluded.reply, created_ms = excluded.created_ms
            WHERE idempotency_keys.created_ms <= \(claim.nowMs - IdempotencyKey.retentionMs)
            """)
        guard c.changes > 0 else { throw IdempotentWrites.inUse() }
    }

    func record(userId: String, key: String, nowMs: Int64) async throws -> IdempotencyRecord? {
        try await database.read { c in
            try c.queryOne(
                IdempotencyRecord.self,
                """
                SELECT fingerprint, reply, created_ms FROM idempotency_keys
                WHERE user_id = \(userId) AND idempotency_key = \(key) AND created_ms > \(nowMs - IdempotencyKey.retentionMs)
                """)
        }
    }

    func save(_ claim: IdempotencyClaim, reply: String) async throws {
        try await database.write { tx in try Self.save(claim, reply: reply, on: tx.connection) }
    }

    func purge(before cutoffMs: Int64, limit: Int) async throws -> Int {
        try await database.write { tx in
            try tx.query(
                """
                DELETE FROM idempotency_keys WHERE (user_id, idempotency_key) IN (
                    SELECT user_id, idempotency_key FROM idempotency_keys WHERE created_ms <= \(cutoffMs) ORDER BY created_ms
                        LIMIT \(limit))
                """)
            return tx.connection.changes
        }
    }
}
