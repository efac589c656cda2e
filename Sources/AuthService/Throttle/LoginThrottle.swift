import Shared

/// Login throttling per login identifier, persisted in `login_failures`.
///
/// Attempts for one identifier run one at a time (`attempt`), so checking the count, verifying
/// the password and recording the outcome cannot interleave: concurrent guesses cannot slip
/// past the limit, and concurrent correct logins are never counted as failures. When
/// `maxFailures` failures lie within the window, attempts get 429 `too_many_attempts` with
/// `retryAfter` = seconds until the oldest of them leaves the window. Unknown accounts are
/// throttled the same way, so the answer never reveals whether an account exists. A successful
/// login deletes the identifier's failures (`clear`, inside the session's transaction).
struct LoginThrottle: Sendable {
    let database: Database
    let maxFailures: Int
    /// Window length in ms.
    let windowMs: Int64
    private let locks = KeyedLock()

    init(database: Database, maxFailures: Int, windowMs: Int64) {
        self.database = database
        self.maxFailures = maxFailures
        self.windowMs = windowMs
    }

    /// The key stored for a login identifier: SHA-256 of its trimmed lower-cased form (the
    /// identifier may be a mistyped password, so it is not stored as typed).
    static func key(_ login: String) -> String {
        SessionToken.digest("login:" + login.trimmingWhitespace().lowercased())
    }

    /// The key stored for an existing account: failures count per account, whichever of its
    /// identifiers (username or email) was typed.
    static func accountKey(_ userId: String) -> String {
        SessionToken.digest("account:" + userId)
    }

    /// Runs one login attempt for `key`: throws 429 when over the limit, otherwise runs `body`
    /// and records a failure when it throws `failure`.
    /// - Throws: 429 `too_many_attempts` (with `retryAfter` seconds, ≥ 1), or what `body` throws.
    func attempt<T: Sendable>(key: String, failure: ServiceError, _ body: () async throws -> T)
        async throws -> T
    {
        try await locks.withLock(key) {
            try await check(key: key)
            do {
                return try await body()
            } catch let error as ServiceError where error == failure {
                try await recordFailure(key: key)
                throw error
            }
        }
    }

    /// Deletes `key`'s failures (call in the transaction that completes a successful login).
    static func clear(key: String, _ tx: Transaction) throws {
        try tx.query("DELETE FROM login_failures WHERE login = ?", [key])
    }

    private func check(key: String) async throws {
        let now = Timestamp.nowMs()
        let windowMs = self.windowMs
        let times = try await database.read { c in
            try c.query(
                "SELECT at FROM login_failures WHERE login = ? AND at > ? ORDER BY at",
                [key, now - windowMs]
            )
            .map { $0.int(0) }
        }
        guard times.count >= maxFailures else { return }
        let freedAt = times[times.count - maxFailures] + windowMs
        throw ServiceError(
            code: "too_many_attempts", message: "too many failed logins; try again later", status: 429,
            retryAfter: max(1, Int((freedAt - now + 999) / 1000)))
    }

    private func recordFailure(key: String) async throws {
        let windowMs = self.windowMs
        try await database.write { tx in
            let now = Timestamp.nowMs()
            try tx.query("DELETE FROM login_failures WHERE at <= ?", [now - windowMs])  // prune every identifier
            try tx.query("INSERT INTO login_failures(login, at) VALUES (?, ?)", [key, now])
        }
    }
}
